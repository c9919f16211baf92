"""The one table of per-model options: every spelling, kind and role of each option.

:data:`OPTIONS` is the only place that knows an option's spellings (long, short, negative,
``LLAMA_ARG_*``), its kind and whether it becomes a worker flag. The router's preset INI, its
per-model CLI defaults, the worker-argument renderer, the worker's own flags
(:mod:`corral.options.flags`) and the generated docs all go through it, so a key means the same
thing wherever it is written. Values are normalised by :mod:`corral.options.values`, whose
types and parsers are exported from here too.
"""

from __future__ import annotations

from collections.abc import Iterable

from corral.options.values import (
    OptionError,
    OptionSpec,
    normalise_value,
    parse_bool,
    parse_size,
    string_items,
)
from corral.sampling_fields import sampling_option_rows
from corral.suggest import did_you_mean

__all__ = [
    "OPTIONS",
    "SPEC_TYPES",
    "OptionError",
    "OptionSpec",
    "find_option",
    "normalise_options",
    "option_spec",
    "parse_bool",
    "parse_size",
    "render_worker_args",
    "string_items",
]

_IGNORED_KEYS = frozenset({"version"})  # reserved by upstream for future use
_CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
# Every type llama-server's --spec-type knows (common/speculative.cpp); the worker runs some of
# them and refuses the others when it loads (docs/serving.md, speculative decoding).
SPEC_TYPES = (
    "none",
    "draft-simple",
    "draft-eagle3",
    "draft-mtp",
    "draft-dflash",
    "draft-dspark",
    "ngram-simple",
    "ngram-map-k",
    "ngram-map-k4v",
    "ngram-mod",
    "ngram-cache",
)


OPTIONS: tuple[OptionSpec, ...] = (
    # Which file and which names: never passed through, the catalogue entry carries them.
    OptionSpec("model", "str", "model", ("m", "LLAMA_ARG_MODEL")),
    OptionSpec("mmproj", "str", "model", ("mm", "LLAMA_ARG_MMPROJ")),
    # Whether a projector found beside the model is used; a named ``mmproj`` always is.
    OptionSpec(
        "mmproj-auto",
        "bool",
        "model",
        ("LLAMA_ARG_MMPROJ_AUTO",),
        negatives=("no-mmproj", "no-mmproj-auto"),
        default="true",
    ),
    OptionSpec("hf-repo", "str", "model", ("hf", "hfr", "LLAMA_ARG_HF_REPO")),
    OptionSpec("hf-file", "str", "model", ("hff", "LLAMA_ARG_HF_FILE")),
    OptionSpec("alias", "str", "model", ("a", "LLAMA_ARG_ALIAS")),
    OptionSpec("tags", "str", "model", ("LLAMA_ARG_TAGS",)),
    # Upstream's preset-only keys, then Corral's own (ttl, pin).
    OptionSpec("load-on-startup", "bool", "preset", ("__PRESET_LOAD_ON_STARTUP",), default="false"),
    OptionSpec(
        "stop-timeout",
        "float",
        "preset",
        ("__PRESET_STOP_TIMEOUT",),
        bound="non_negative",
        default="10",
    ),
    OptionSpec(
        "dedup-cache-models", "bool", "preset", ("__PRESET_DEDUP_CACHE_MODELS",), default="false"
    ),
    OptionSpec("ttl", "float", "preset", bound="positive"),
    OptionSpec("pin", "bool", "preset", default="false"),
    OptionSpec("memory", "size", "preset"),
    # The router's tools this model's chats are offered (docs/tools.md "Per-model tool sets").
    OptionSpec("tools", "str", "preset"),
    # Worker flags.
    OptionSpec(
        "ctx-size", "int", spellings=("c", "LLAMA_ARG_CTX_SIZE"), bound="non_negative", default="0"
    ),
    OptionSpec("threads", "int", spellings=("t", "LLAMA_ARG_THREADS")),
    OptionSpec(
        "batch-size", "int", spellings=("b", "LLAMA_ARG_BATCH"), bound="positive", default="2048"
    ),
    OptionSpec(
        "ubatch-size", "int", spellings=("ub", "LLAMA_ARG_UBATCH"), bound="positive", default="512"
    ),
    OptionSpec(
        "n-gpu-layers",
        "int",
        spellings=("ngl", "gpu-layers", "LLAMA_ARG_N_GPU_LAYERS"),
        literals=("auto", "all"),
        default="auto",
    ),
    # ggml RPC servers (HOST:PORT) whose devices take offloaded layers; the worker checks them.
    OptionSpec("rpc", "list", spellings=("LLAMA_ARG_RPC",)),
    OptionSpec("n-predict", "int", spellings=("n", "predict", "LLAMA_ARG_N_PREDICT"), default="-1"),
    OptionSpec("parallel", "int", spellings=("np", "LLAMA_ARG_N_PARALLEL"), default="-1"),
    OptionSpec(
        "kv-unified",
        "bool",
        spellings=("kvu", "LLAMA_ARG_KV_UNIFIED"),
        negatives=("no-kv-unified", "no-kvu", "LLAMA_ARG_NO_KV_UNIFIED"),
        default="false",
    ),
    OptionSpec("spm-infill", "bool", default="false"),
    OptionSpec(
        "cache-reuse",
        "int",
        spellings=("LLAMA_ARG_CACHE_REUSE",),
        bound="non_negative",
        default="0",
    ),
    OptionSpec(
        "kv-unified-per-slot",
        "int",
        spellings=("LLAMA_ARG_KV_UNIFIED_PER_SLOT",),
        bound="non_negative",
        default="0",
    ),
    # Sliding-window models (gemma-3, gpt-oss): the window layers' cache keeps only the window
    # unless --swa-full; checkpoints of it let a prompt that differs before the window resume
    # (worker/cache/checkpoints.py).
    OptionSpec("swa-full", "bool", spellings=("LLAMA_ARG_SWA_FULL",), default="false"),
    OptionSpec(
        "ctx-checkpoints",
        "int",
        spellings=("ctxcp", "swa-checkpoints", "LLAMA_ARG_CTX_CHECKPOINTS"),
        default="32",
    ),
    OptionSpec(
        "checkpoint-min-step",
        "int",
        spellings=("cms", "LLAMA_ARG_CHECKPOINT_MIN_SPACING_NT"),
        bound="non_negative",
        default="8192",
    ),
    # Sampling: llama-server's sampling flags (common/arg.cpp), each a request default; their
    # rows are built from the table of sampling fields.
    *sampling_option_rows(),
    OptionSpec("chat-template", "str", spellings=("LLAMA_ARG_CHAT_TEMPLATE",)),
    OptionSpec("chat-template-file", "str", spellings=("LLAMA_ARG_CHAT_TEMPLATE_FILE",)),
    OptionSpec("chat-template-kwargs", "str", spellings=("LLAMA_ARG_CHAT_TEMPLATE_KWARGS",)),
    OptionSpec(
        "jinja",
        "bool",
        spellings=("LLAMA_ARG_JINJA",),
        negatives=("no-jinja", "LLAMA_ARG_NO_JINJA"),
        default="true",
    ),
    OptionSpec("reasoning", "switch", spellings=("rea", "LLAMA_ARG_REASONING"), default="auto"),
    OptionSpec(
        "reasoning-format",
        "choice",
        spellings=("LLAMA_ARG_THINK",),
        literals=("none", "deepseek", "deepseek-legacy", "auto"),
        default="auto",
    ),
    # Upstream rejects anything below -1; -1 means no budget.
    OptionSpec(
        "reasoning-budget",
        "int",
        spellings=("LLAMA_ARG_THINK_BUDGET",),
        bound="non_negative",
        literals=("-1",),
        default="-1",
    ),
    OptionSpec(
        "reasoning-budget-message", "str", spellings=("LLAMA_ARG_THINK_BUDGET_MESSAGE",), default=""
    ),
    OptionSpec(
        "mmap",
        "bool",
        spellings=("LLAMA_ARG_MMAP",),
        negatives=("no-mmap", "LLAMA_ARG_NO_MMAP"),
        default="true",
    ),
    OptionSpec("mlock", "bool", spellings=("LLAMA_ARG_MLOCK",), default="false"),
    OptionSpec(
        "mmproj-offload",
        "bool",
        spellings=("LLAMA_ARG_MMPROJ_OFFLOAD",),
        negatives=("no-mmproj-offload",),
        default="true",
    ),
    OptionSpec("flash-attn", "switch", spellings=("fa", "LLAMA_ARG_FLASH_ATTN"), default="auto"),
    # llama-server's --numa (common/arg.cpp); unset: no NUMA strategy.
    OptionSpec(
        "numa",
        "choice",
        spellings=("LLAMA_ARG_NUMA",),
        literals=("distribute", "isolate", "numactl"),
    ),
    # llama-server's CPU affinity and priority (worker/host/cpu_placement.py): -C and -Cr add
    # up to one CPU set, --prio -1..3 is low..realtime; unset: as the worker was started.
    OptionSpec("cpu-mask", "str", spellings=("C",)),
    OptionSpec("cpu-range", "str", spellings=("Cr",)),
    OptionSpec("prio", "choice", literals=("-1", "0", "1", "2", "3"), default="0"),
    OptionSpec(
        "cache-type-k",
        "choice",
        spellings=("ctk", "LLAMA_ARG_CACHE_TYPE_K"),
        literals=_CACHE_TYPES,
        default="f16",
    ),
    OptionSpec(
        "cache-type-v",
        "choice",
        spellings=("ctv", "LLAMA_ARG_CACHE_TYPE_V"),
        literals=_CACHE_TYPES,
        default="f16",
    ),
    OptionSpec(
        "rope-freq-base", "float", spellings=("LLAMA_ARG_ROPE_FREQ_BASE",), bound="positive"
    ),
    # Upstream rejects 0 and anything below -1; -1 means never.
    OptionSpec("sleep-idle-seconds", "int", bound="positive", literals=("-1",), default="-1"),
    OptionSpec(
        "slots",
        "bool",
        spellings=("LLAMA_ARG_ENDPOINT_SLOTS",),
        negatives=("no-slots", "LLAMA_ARG_NO_ENDPOINT_SLOTS"),
        default="true",
    ),
    OptionSpec("slot-save-path", "str"),
    # Local media: file:// URLs read from this folder only (worker/media/local_files.py).
    OptionSpec("media-path", "str"),
    # Corral: URL media may name private hosts (worker/media/downloads.py); off, refused.
    OptionSpec("media-allow-private", "bool", default="false"),
    # Copies of slot caches in host memory, in MiB; -1: no cap, 0: none
    # (worker/cache/prompt_cache.py).
    OptionSpec(
        "cache-ram",
        "int",
        spellings=("cram", "LLAMA_ARG_CACHE_RAM"),
        bound="non_negative",
        literals=("-1",),
        default="8192",
    ),
    OptionSpec(
        "cache-idle-slots",
        "bool",
        spellings=("LLAMA_ARG_CACHE_IDLE_SLOTS",),
        negatives=("no-cache-idle-slots",),
        default="true",
    ),
    # Corral's own: slot caches kept across stops and sleeps (docs/serving.md).
    OptionSpec("kv-persist", "bool", negatives=("no-kv-persist",), default="true"),
    OptionSpec("kv-cache-dir", "str"),
    OptionSpec("kv-cache-max", "size", default="4294967296"),
    OptionSpec("metrics", "bool", spellings=("LLAMA_ARG_ENDPOINT_METRICS",), default="false"),
    OptionSpec(
        "context-shift",
        "bool",
        spellings=("LLAMA_ARG_CONTEXT_SHIFT",),
        negatives=("no-context-shift",),
        default="false",
    ),
    # Tokens of the prompt a context shift keeps; -1: all of it.
    OptionSpec("keep", "int", literals=("-1",), bound="non_negative", default="0"),
    # Answers carry llama-server's __verbose debug object (a request's verbose overrides it).
    OptionSpec("verbose", "bool", spellings=("v", "log-verbose"), default="false"),
    OptionSpec(
        "embeddings", "bool", spellings=("embedding", "LLAMA_ARG_EMBEDDINGS"), default="false"
    ),
    OptionSpec(
        "pooling",
        "choice",
        spellings=("LLAMA_ARG_POOLING",),
        literals=("none", "mean", "cls", "last", "rank"),
    ),
    OptionSpec("reranking", "bool", spellings=("rerank", "LLAMA_ARG_RERANKING"), default="false"),
    OptionSpec(
        "webui",
        "bool",
        spellings=("ui", "LLAMA_ARG_UI"),
        negatives=("no-webui", "no-ui", "LLAMA_ARG_NO_UI"),
    ),
    OptionSpec("lora", "list"),
    OptionSpec("lora-scaled", "scaled-list"),
    OptionSpec("lora-init-without-apply", "bool", default="false"),
    # Control vectors (common/arg.cpp): added to the hidden state of the layers in the range.
    OptionSpec("control-vector", "list"),
    OptionSpec("control-vector-scaled", "scaled-list"),
    OptionSpec("control-vector-layer-range", "pair"),
    # Speculative decoding. The router turns spec-draft-hf and relative model-draft paths into
    # an absolute model-draft before a worker sees them (router/catalogue/draft_models.py).
    OptionSpec(
        "model-draft", "str", spellings=("md", "spec-draft-model", "LLAMA_ARG_SPEC_DRAFT_MODEL")
    ),
    OptionSpec(
        "spec-draft-hf",
        "str",
        spellings=("hfd", "hfrd", "hf-repo-draft", "LLAMA_ARG_SPEC_DRAFT_HF_REPO"),
    ),
    OptionSpec("spec-type", "choices", spellings=("LLAMA_ARG_SPEC_TYPE",), literals=SPEC_TYPES),
    # --draft, --draft-max and --draft-min are older llama-servers' names, which the current one
    # refuses as removed; Corral keeps them as aliases so old command lines still work.
    OptionSpec(
        "spec-draft-n-max",
        "int",
        spellings=("draft", "draft-n", "draft-max", "LLAMA_ARG_SPEC_DRAFT_N_MAX"),
        bound="non_negative",
        default="3",
    ),
    OptionSpec(
        "spec-draft-n-min",
        "int",
        spellings=("draft-min", "draft-n-min", "LLAMA_ARG_SPEC_DRAFT_N_MIN"),
        bound="non_negative",
        default="0",
    ),
    OptionSpec(
        "spec-draft-p-min",
        "float",
        spellings=("draft-p-min", "LLAMA_ARG_SPEC_DRAFT_P_MIN"),
        bound="non_negative",
        default="0",
    ),
    OptionSpec(
        "ctx-size-draft",
        "int",
        spellings=("cd", "LLAMA_ARG_CTX_SIZE_DRAFT"),
        bound="non_negative",
        default="0",
    ),
    OptionSpec(
        "spec-draft-ngl",
        "int",
        spellings=(
            "ngld",
            "gpu-layers-draft",
            "n-gpu-layers-draft",
            "LLAMA_ARG_N_GPU_LAYERS_DRAFT",
        ),
        literals=("auto", "all"),
        default="auto",
    ),
    OptionSpec("spec-draft-threads", "int", spellings=("td", "threads-draft"), bound="positive"),
    OptionSpec("spec-ngram-simple-size-n", "int", bound="positive", default="12"),
    OptionSpec("spec-synth-len", "float", spellings=("LLAMA_ARG_SPEC_SYNTH_LEN",)),
    OptionSpec("spec-synth-rates", "str", spellings=("LLAMA_ARG_SPEC_SYNTH_RATES",)),
    OptionSpec("spec-ngram-simple-size-m", "int", bound="positive", default="48"),
    # --spec-type ngram-mod's settings (issue 29); at most 1024 each, checked at load.
    OptionSpec("spec-ngram-mod-n-match", "int", bound="positive", default="24"),
    OptionSpec("spec-ngram-mod-n-max", "int", bound="non_negative", default="64"),
    OptionSpec("spec-ngram-mod-n-min", "int", bound="non_negative", default="48"),
    # llama-server's "default speculative decoding config": ngram-mod added to --spec-type.
    OptionSpec("spec-default", "bool", default="false"),
    # --spec-type ngram-cache's lookup cache files (llama.cpp's llama-lookup-create makes them).
    OptionSpec("lookup-cache-static", "str", spellings=("lcs",)),
    OptionSpec("lookup-cache-dynamic", "str", spellings=("lcd",)),
    # --spec-type ngram-map-k and ngram-map-k4v's settings (issue 29); sizes at most 1024.
    OptionSpec("spec-ngram-map-k-size-n", "int", bound="positive", default="12"),
    OptionSpec("spec-ngram-map-k-size-m", "int", bound="positive", default="48"),
    OptionSpec("spec-ngram-map-k-min-hits", "int", bound="positive", default="1"),
    OptionSpec("spec-ngram-map-k4v-size-n", "int", bound="positive", default="12"),
    OptionSpec("spec-ngram-map-k4v-size-m", "int", bound="positive", default="48"),
    OptionSpec("spec-ngram-map-k4v-min-hits", "int", bound="positive", default="1"),
    # GPU (issue 26): llama-server's device flags, spelled as its common/arg.cpp spells them.
    OptionSpec("device", "list", spellings=("dev", "LLAMA_ARG_DEVICE")),
    OptionSpec("fit", "on-off", spellings=("LLAMA_ARG_FIT",), default="on"),
    OptionSpec("fit-target", "numbers", spellings=("fitt", "LLAMA_ARG_FIT_TARGET"), default="1024"),
    OptionSpec(
        "fit-ctx",
        "int",
        spellings=("fitc", "LLAMA_ARG_FIT_CTX"),
        bound="non_negative",
        default="4096",
    ),
    OptionSpec(
        "split-mode",
        "choice",
        spellings=("sm", "LLAMA_ARG_SPLIT_MODE"),
        literals=("none", "layer", "row", "tensor"),
        default="layer",
    ),
    OptionSpec("tensor-split", "numbers", spellings=("ts", "LLAMA_ARG_TENSOR_SPLIT")),
    OptionSpec(
        "main-gpu", "int", spellings=("mg", "LLAMA_ARG_MAIN_GPU"), bound="non_negative", default="0"
    ),
    OptionSpec("override-tensor", "list", spellings=("ot", "LLAMA_ARG_OVERRIDE_TENSOR")),
    OptionSpec("cpu-moe", "bool", spellings=("cmoe", "LLAMA_ARG_CPU_MOE"), default="false"),
    OptionSpec(
        "n-cpu-moe",
        "int",
        spellings=("ncmoe", "LLAMA_ARG_N_CPU_MOE"),
        bound="non_negative",
        default="0",
    ),
    OptionSpec(
        "n-cpu-ffn",
        "int",
        spellings=("ncffn", "LLAMA_ARG_N_CPU_FFN"),
        bound="non_negative",
        default="0",
    ),
    OptionSpec(
        "kv-offload",
        "bool",
        spellings=("kvo", "LLAMA_ARG_KV_OFFLOAD"),
        negatives=("no-kv-offload", "nkvo", "LLAMA_ARG_NO_KV_OFFLOAD"),
        default="true",
    ),
    OptionSpec("op-offload", "bool", negatives=("no-op-offload",), default="true"),
    OptionSpec("spec-draft-device", "list", spellings=("devd", "device-draft")),
    # llama-server flags (issue 29). Defaults of every request that says nothing itself.
    OptionSpec("grammar", "str"),
    OptionSpec("grammar-file", "str"),
    OptionSpec("json-schema", "str", spellings=("j",)),
    OptionSpec("json-schema-file", "str", spellings=("jf",)),
    # Repeatable, as llama-server: every -r a stop string (-l, the biases: sampling rows).
    OptionSpec("reverse-prompt", "strings", spellings=("r",)),
    # The projector (libmtmd): its device, warm-up and image token bounds; "none" is the CPU.
    OptionSpec("mmproj-device", "str", spellings=("mmdev",)),
    OptionSpec("warmup", "bool", negatives=("no-warmup",), default="true"),
    OptionSpec(
        "image-min-tokens", "int", spellings=("LLAMA_ARG_IMAGE_MIN_TOKENS",), bound="positive"
    ),
    OptionSpec(
        "image-max-tokens", "int", spellings=("LLAMA_ARG_IMAGE_MAX_TOKENS",), bound="positive"
    ),
    OptionSpec(
        "mtmd-batch-max-tokens",
        "int",
        spellings=("LLAMA_ARG_MTMD_BATCH_MAX_TOKENS",),
        bound="positive",
    ),
    # The chat template's reasoning_effort variable ("default": the template's own).
    OptionSpec("reasoning-effort", "str", spellings=("LLAMA_ARG_REASONING_EFFORT",)),
    # The template's preserve_reasoning: earlier turns keep their reasoning.
    OptionSpec(
        "reasoning-preserve",
        "bool",
        spellings=("LLAMA_ARG_REASONING_PRESERVE",),
        negatives=("no-reasoning-preserve", "LLAMA_ARG_NO_REASONING_PRESERVE"),
    ),
    # Threads reading prompts (batches); unset: as many as --threads.
    OptionSpec("threads-batch", "int", spellings=("tb",)),
    # RoPE and YaRN context scaling; unset: the model's own.
    OptionSpec(
        "rope-scaling",
        "choice",
        spellings=("LLAMA_ARG_ROPE_SCALING_TYPE",),
        literals=("none", "linear", "yarn"),
    ),
    OptionSpec("rope-scale", "float", spellings=("LLAMA_ARG_ROPE_SCALE",), bound="positive"),
    OptionSpec(
        "rope-freq-scale", "float", spellings=("LLAMA_ARG_ROPE_FREQ_SCALE",), bound="positive"
    ),
    OptionSpec(
        "yarn-orig-ctx", "int", spellings=("LLAMA_ARG_YARN_ORIG_CTX",), bound="non_negative"
    ),
    OptionSpec("yarn-ext-factor", "float", spellings=("LLAMA_ARG_YARN_EXT_FACTOR",)),
    OptionSpec("yarn-attn-factor", "float", spellings=("LLAMA_ARG_YARN_ATTN_FACTOR",)),
    OptionSpec("yarn-beta-slow", "float", spellings=("LLAMA_ARG_YARN_BETA_SLOW",)),
    OptionSpec("yarn-beta-fast", "float", spellings=("LLAMA_ARG_YARN_BETA_FAST",)),
    OptionSpec("check-tensors", "bool", default="false"),
    # GGUF metadata replaced as the model loads: KEY=int|float|bool|str:VALUE, comma-separated.
    OptionSpec("override-kv", "list"),
    # Whether requests that do not say reuse their slot's cached prompt (their cache_prompt).
    OptionSpec(
        "cache-prompt",
        "bool",
        spellings=("LLAMA_ARG_CACHE_PROMPT",),
        negatives=("no-cache-prompt", "LLAMA_ARG_NO_CACHE_PROMPT"),
        default="true",
    ),
    # Whether a last assistant message is continued when the request does not say.
    OptionSpec(
        "prefill-assistant",
        "bool",
        spellings=("LLAMA_ARG_PREFILL_ASSISTANT",),
        negatives=("no-prefill-assistant", "LLAMA_ARG_NO_PREFILL_ASSISTANT"),
        default="true",
    ),
    # How pooled embeddings are normalised (worker/engine/embedding_context.py); -1: not.
    OptionSpec("embd-normalize", "int", bound="non_negative", literals=("-1",), default="2"),
    # Seconds a stream may stay silent before an SSE comment keeps it open; 0 or less: never.
    OptionSpec(
        "sse-ping-interval", "int", spellings=("LLAMA_ARG_SSE_PING_INTERVAL",), default="30"
    ),
    # The Web UI's settings, handed out by /props (llama-server's --webui-config).
    OptionSpec("ui-config", "str", spellings=("webui-config", "LLAMA_ARG_UI_CONFIG")),
    OptionSpec(
        "ui-config-file", "str", spellings=("webui-config-file", "LLAMA_ARG_UI_CONFIG_FILE")
    ),
)

_BY_NAME: dict[str, OptionSpec] = {spec.name: spec for spec in OPTIONS}
# Every spelling → (option, whether the spelling is a negative one).
_BY_KEY: dict[str, tuple[OptionSpec, bool]] = {
    key: (spec, negated)
    for spec in OPTIONS
    for negated, keys in ((False, (spec.name, *spec.spellings)), (True, spec.negatives))
    for key in keys
}


def option_spec(name: str) -> OptionSpec:
    """The option whose canonical name this is."""
    return _BY_NAME[name]


def find_option(key: str) -> tuple[OptionSpec, bool] | None:
    """The option a key spells, and whether the spelling is a negative one (``no-mmap``)."""
    return _BY_KEY.get(key.lstrip("-"))


def normalise_options(pairs: Iterable[tuple[str, str]], *, where: str) -> dict[str, str]:
    """``key = value`` pairs in any spelling → canonical name → normalised value.

    ``where`` starts every message (e.g. ``"models.ini: section [foo]"``). Two spellings of one
    option in the same place are an error rather than a silent last-one-wins.
    """
    options: dict[str, str] = {}
    spelled_as: dict[str, str] = {}
    for key, raw in pairs:
        if key in _IGNORED_KEYS:
            continue
        found = find_option(key)
        if found is None:
            known = [k for k in _BY_KEY if not k.startswith(("LLAMA_ARG_", "__PRESET_"))]
            raise OptionError(f"{where}: unknown key '{key}'{did_you_mean(key, known)}")
        spec, negated = found
        if spec.name in options:
            first = spelled_as[spec.name]
            raise OptionError(f"{where}: key '{key}' sets '{spec.name}' again (as '{first}' did)")
        try:
            options[spec.name] = normalise_value(spec, raw.strip(), negated=negated)
        except ValueError as error:
            raise OptionError(f"{where}: key '{key}': {error}") from None
        spelled_as[spec.name] = key
    return options


def render_worker_args(options: Iterable[tuple[str, str]]) -> list[str]:
    """Worker flags for the worker-role options: ``--ctx-size 2048``, ``--jinja``, ``--no-mmap``.

    A false boolean without a negative flag is left out: the worker's default is already off.
    """
    args: list[str] = []
    for name, value in options:
        spec = _BY_NAME[name]
        if spec.role != "worker":
            continue
        if spec.kind == "strings":  # one flag per string, so that each stays whole
            args += [arg for item in string_items(value) for arg in (f"--{name}", item)]
        elif spec.kind == "pair":
            args += [f"--{name}", *value.split(",")]
        elif spec.kind != "bool":
            args += [f"--{name}", value]
        elif value == "true":
            args.append(f"--{name}")
        elif spec.negatives:
            args.append(f"--{spec.negatives[0]}")
    return args
