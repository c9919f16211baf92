"""Command-line settings of a worker, spelled like llama-server's flags.

The per-model flags come from the router's option table (:mod:`corral.options.flags`), so every
option a preset can set is accepted here. Options the worker cannot honour yet are logged at
startup rather than silently ignored.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral.children.environment import DEFAULT_MAX_BODY, max_body_from
from corral.options.flags import (
    ExactFlagParser,
    add_model_flags,
    add_other_llama_server_flags,
    model_options_from,
    other_flags_given,
)
from corral.options.kv_layout import KvLayout, kv_layout
from corral.options.model_options import ModelOptions
from worker.devices.settings import GpuSettings, gpu_settings
from worker.host.cpu_placement import cpu_set
from worker.host.cpu_threads import default_threads
from worker.media.rules import MediaRules
from worker.model_settings import (
    ProjectorSettings,
    RopeSettings,
    default_constraint,
    kv_overrides,
    projector_settings,
    rope_settings,
    ui_settings,
)
from worker.rpc.endpoints import Endpoint, parse_endpoints
from worker.sampling.params import SamplingParams
from worker.sampling.server_defaults import sampling_defaults
from worker.speculative.settings import SpeculativeSettings, speculative_settings

__all__ = [
    "DEFAULT_KV_CACHE_MAX",
    "WorkerSettings",
    "default_kv_cache_dir",
    "parse_worker_args",
    "worker_flags",
]

# Accepted so that presets written for llama-server load, but not acted on yet.
NOT_YET_SUPPORTED = ("webui",)
# llama-server's defaults (the option table's), for settings built without flags (tests, tools).
_SERVER = ModelOptions()
_SERVER_KV = kv_layout(_SERVER)
DEFAULT_KV_CACHE_MAX = _SERVER.integer("kv-cache-max")


def default_kv_cache_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/corral/kv``, else ``~/.cache/corral/kv``: beside Corral's other caches."""
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "corral" / "kv"


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    model: Path
    alias: str  # the model's id: the first of its names in sorted order, as llama-server's
    aliases: tuple[str, ...] = ()  # every --alias name (a comma list, as llama-server takes)
    tags: tuple[str, ...] = ()  # --tags: informational, listed in /models as llama-server does
    host: str = "127.0.0.1"
    port: int = 0
    # Run alone as llama-server (worker/host/access.py); the router passes neither key nor origins.
    api_keys: tuple[str, ...] = ()
    cors_origins: tuple[str, ...] = ("*",)
    allowed_hosts: tuple[str, ...] = ()  # Host names besides loopback ones (corral/http/hosts.py)
    # The defaults are llama-server's (docs/serving.md, Defaults): 0 = the trained context.
    ctx_size: int = _SERVER_KV.ctx_size
    threads: int = 1
    threads_batch: int | None = None  # prompt (batch) threads; None: as many as --threads
    batch_size: int = _SERVER.integer("batch-size")
    ubatch_size: int = _SERVER.integer("ubatch-size")
    n_gpu_layers: int = -1  # as llama.cpp's common: -1 auto (the fit may lower it), -2 all
    rpc: tuple[Endpoint, ...] = ()  # RPC servers whose devices take offloaded layers
    n_predict: int = _SERVER.integer("n-predict")
    sampling: SamplingParams = field(default_factory=SamplingParams)  # --temp, --top-k, …
    # The options given (names): a model file's general.sampling.* fills in the others.
    options_given: frozenset[str] = frozenset()
    chat_template: str | None = None  # --chat-template, or --chat-template-file's text
    jinja: bool = _SERVER.flag("jinja")
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    # on, off or auto: enable_thinking's default (docs/tool-calls.md)
    reasoning: str = _SERVER.word("reasoning")
    # none, deepseek, deepseek-legacy or auto (docs/tool-calls.md)
    reasoning_format: str = _SERVER.word("reasoning-format")
    reasoning_budget: int = _SERVER.integer("reasoning-budget")  # tokens of thinking; -1: unlimited
    # Written before the forced end tag
    reasoning_budget_message: str = _SERVER.word("reasoning-budget-message")
    use_mmap: bool = _SERVER.flag("mmap")
    use_mlock: bool = _SERVER.flag("mlock")
    flash_attn: str = _SERVER.word("flash-attn")  # on, off or auto
    numa: str | None = None  # distribute, isolate or numactl: llama_numa_init's strategy
    cpus: frozenset[int] | None = None  # -C and -Cr: every thread's CPUs; None: as started
    priority: int = 0  # --prio: -1 low … 3 realtime; 0 leaves the threads' niceness as it is
    parallel: int = _SERVER_KV.slots
    kv_unified: bool = _SERVER_KV.unified  # one KV cache shared by the slots
    kv_unified_per_slot: int = _SERVER_KV.per_slot  # a slot's most tokens; 0: no cap
    # A sliding-window model keeps its whole context in the window layers too (more memory)
    swa_full: bool = _SERVER.flag("swa-full")
    ctx_checkpoints: int = _SERVER.integer("ctx-checkpoints")  # per slot; 0 or less: none
    checkpoint_min_step: int = _SERVER.integer("checkpoint-min-step")  # tokens; 0: no minimum
    sleep_idle_seconds: float | None = None  # free the weights after this long without work
    embeddings: bool = _SERVER.flag("embeddings")
    pooling: str | None = None  # none, mean, cls, last, rank; None: the model's own
    # Implies embeddings and rank pooling, as upstream's --reranking
    reranking: bool = _SERVER.flag("reranking")
    rope_freq_base: float = 0.0
    rope: RopeSettings = field(default_factory=RopeSettings)
    check_tensors: bool = _SERVER.flag("check-tensors")
    kv_overrides: tuple[tuple[str, str, str], ...] = ()  # --override-kv: (key, type, value)
    cache_type_k: str = _SERVER_KV.type_k
    cache_type_v: str = _SERVER_KV.type_v
    mmproj: Path | None = None  # the multimodal projector the router paired (docs/serving.md)
    mmproj_offload: bool = _SERVER.flag("mmproj-offload")
    projector: ProjectorSettings = field(default_factory=ProjectorSettings)
    endpoint_slots: bool = _SERVER.flag("slots")  # GET /slots; --no-slots answers 501, as upstream
    slot_save_path: Path | None = None  # POST /slots/{id}: no path, no save/restore (501)
    media_path: Path | None = None  # file:// media come from here; none: file:// refused (400)
    # URL media may name private, loopback and link-local hosts (docs/security.md)
    media_allow_private: bool = _SERVER.flag("media-allow-private")
    # A request's media in all, however given: the router's --max-body (MAX_BODY_ENV)
    media_max_bytes: int = DEFAULT_MAX_BODY
    # Copies of slot caches in host memory; -1: no cap, 0: none
    cache_ram_mib: int = _SERVER.integer("cache-ram")
    # With a unified cache, idle slots' caches go to those copies
    cache_idle_slots: bool = _SERVER.flag("cache-idle-slots")
    # Save slot caches on a graceful stop or sleep (worker/cache/kv_store.py).
    kv_persist: bool = _SERVER.flag("kv-persist")
    kv_cache_dir: Path = Path("kv-cache")
    kv_cache_max: int = _SERVER.integer("kv-cache-max")
    lora: tuple[tuple[str, float], ...] = ()  # adapter files and their scales, ids in order
    control_vectors: tuple[tuple[str, float], ...] = ()  # files and their scales
    control_vector_layers: tuple[int, int] = (-1, -1)  # first, last; -1: the model's
    lora_init_without_apply: bool = _SERVER.flag("lora-init-without-apply")
    speculative: SpeculativeSettings = field(default_factory=SpeculativeSettings)
    gpu: GpuSettings = field(default_factory=GpuSettings)
    # /metrics answers 501 without it, as llama-server's --metrics
    metrics: bool = _SERVER.flag("metrics")
    context_shift: bool = _SERVER.flag("context-shift")
    # Answers carry __verbose unless the request says otherwise
    verbose: bool = _SERVER.flag("verbose")
    keep: int = _SERVER.integer("keep")  # prompt tokens a context shift keeps; -1: all
    # Defaults of requests that give none (--grammar[-file], --json-schema[-file], -r): GBNF
    # text, a JSON Schema as JSON text, stop strings.
    grammar: str | None = None
    json_schema: str | None = None
    reverse_prompt: tuple[str, ...] = ()
    ui_settings: dict[str, Any] = field(default_factory=dict)  # --ui-config, for /props
    # Seconds of silence before an SSE ping; <= 0: never
    sse_ping_interval: float = _SERVER.real("sse-ping-interval")
    # Requests that do not say reuse the slot's cached prompt
    cache_prompt: bool = _SERVER.flag("cache-prompt")
    spm_infill: bool = _SERVER.flag("spm-infill")  # /infill: suffix before prefix
    cache_reuse: int = _SERVER.integer("cache-reuse")  # --cache-reuse: shortest chunk shifted
    # A last assistant message is continued, unasked
    prefill_assistant: bool = _SERVER.flag("prefill-assistant")
    # How pooled embeddings are normalised; -1: not (Euclidean: 2)
    embd_normalize: int = _SERVER.integer("embd-normalize")
    ignored: dict[str, str] = field(default_factory=dict)
    # llama-server flags a worker has no use for (--models-dir, --threads-http, …), as given.
    no_effect_flags: tuple[str, ...] = ()

    @property
    def media_rules(self) -> MediaRules:
        """What a request's media may make this worker read (worker/media/rules.py)."""
        return MediaRules(self.media_path, self.media_allow_private, self.media_max_bytes)

    @property
    def kv_layout(self) -> KvLayout:
        """The KV cache's layout, as the router's memory estimate computes it."""
        return KvLayout(
            self.parallel,
            self.kv_unified,
            self.ctx_size,
            self.cache_type_k,
            self.cache_type_v,
            self.kv_unified_per_slot,
        )


def _sleep_after(seconds: int) -> float | None:
    # -1, as upstream, means never; the option table has already refused 0 and other negatives.
    return None if seconds == -1 else float(seconds)


def _folder(options: ModelOptions, name: str, parser: argparse.ArgumentParser) -> Path | None:
    """A folder option (none given: None), checked to be a folder as llama-server checks it at
    startup: an empty value names none, and is refused as upstream refuses it."""
    path = options.path(name)
    if name in options and (path is None or not path.is_dir()):
        parser.error(f"--{name}: not a directory: {options.text(name)}")
    return path


def _chat_template(options: ModelOptions, parser: argparse.ArgumentParser) -> str | None:
    path = options.text("chat-template-file")
    if path is None:
        return options.text("chat-template")
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        parser.error(f"--chat-template-file: cannot read {path}: {exc.strerror}")


def _template_kwargs(raw: str | None, parser: argparse.ArgumentParser) -> dict[str, Any]:
    if raw is None:
        return {}
    try:
        kwargs = json.loads(raw)
    except ValueError as exc:
        parser.error(f"--chat-template-kwargs: not JSON: {exc}")
    if not isinstance(kwargs, dict):
        parser.error("--chat-template-kwargs: must be a JSON object")
    return kwargs


def _thinking_default(reasoning: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``--reasoning on|off`` as llama-server: the default ``enable_thinking`` of every render;
    ``--chat-template-kwargs`` that set it win."""
    if reasoning == "auto":
        return kwargs
    return {"enable_thinking": reasoning == "on", **kwargs}


def _effort_default(effort: str | None) -> dict[str, Any]:
    """``--reasoning-effort LEVEL`` as llama-server: the template's ``reasoning_effort``
    variable (``default``: the template's own); ``--chat-template-kwargs`` that set it win."""
    return {} if effort in (None, "default") else {"reasoning_effort": effort}


def _preserve_default(preserve: str | None) -> dict[str, Any]:
    """``--[no-]reasoning-preserve`` as llama-server: the template's ``preserve_reasoning``
    (earlier turns keep their reasoning); unset, on (worker/templates/selection.py)."""
    return {} if preserve is None else {"preserve_reasoning": preserve == "true"}


def _scaled_files(
    options: ModelOptions, plain_name: str, scaled_name: str
) -> tuple[tuple[str, float], ...]:
    # The option table has checked both lists; the plain files come first, at scale 1.
    plain = [(path, 1.0) for path in options.items(plain_name)]
    scaled = [
        (path, float(scale))
        for path, _, scale in (item.rpartition(":") for item in options.items(scaled_name))
    ]
    return (*plain, *scaled)


def _layer_range(value: str | None) -> tuple[int, int]:
    first, _, last = (value or "-1,-1").partition(",")  # the option table checked the pair
    return int(first), int(last)


def _rpc(value: str | None, parser: argparse.ArgumentParser) -> tuple[Endpoint, ...]:
    try:
        return parse_endpoints(value) if value is not None else ()
    except ValueError as exc:
        parser.error(f"--rpc: {exc}")


def _cpus(options: ModelOptions, parser: argparse.ArgumentParser) -> frozenset[int] | None:
    # Checked against the CPUs this process may run on: a worker pinned by an earlier model
    # was given its own CPUs back when it released that model (worker/main.py).
    try:
        cpus = cpu_set(options.text("cpu-mask"), options.text("cpu-range"), os.sched_getaffinity(0))
    except ValueError as exc:
        parser.error(str(exc))
    return None if cpus is None else frozenset(cpus)


def _comma_list(value: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in value.split(",") if item.strip())


def _gpu_layers(value: str) -> int:
    # llama.cpp's common numbers: the fit may lower -1 (auto) but never -2 (all) or a number.
    return {"auto": -1, "all": -2}.get(value) or int(value)


def _threads(value: str | None) -> int:
    # As llama-server: unset is its math-core rule; 0 or less, every logical CPU.
    if value is None:
        return default_threads()
    return int(value) if int(value) > 0 else os.cpu_count() or 1


class _ListDevices(argparse.Action):
    """llama-server's ``--list-devices``: ggml's devices, then exit, whatever else is given."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        # Only here does parsing load llama.cpp.
        from worker.devices.inventory import gpu_devices, list_devices_text

        print(list_devices_text(gpu_devices()), end="")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = ExactFlagParser(prog="python -m worker", description="Serve one GGUF model.")
    parser.add_argument("-m", "--model", type=Path, required=True, help="GGUF file to serve")
    parser.add_argument(
        "-a", "--alias", help="model id to report, or a comma list of names (default: file stem)"
    )
    parser.add_argument("--tags", help="informational tags of the model, comma-separated")
    parser.add_argument("-mm", "--mmproj", type=Path, help="multimodal projector GGUF")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (reported)")
    parser.add_argument("--api-key", help="key(s) every request needs, comma-separated")
    parser.add_argument("--cors-origins", default="*", help="origins browsers may call from")
    parser.add_argument(
        "--allowed-hosts", default="", help="Host names to answer besides loopback ones; *: any"
    )
    parser.add_argument(
        "--list-devices", action=_ListDevices, nargs=0, help="print the GPU devices and exit"
    )
    add_model_flags(parser)
    add_other_llama_server_flags(parser)
    return parser


def worker_flags() -> frozenset[str]:
    """Every flag spelling the worker accepts, so that a llama-server command line can be
    narrowed to the worker's (scripts/run_llama_server_tests.py)."""
    return frozenset(_parser()._option_string_actions)


def parse_worker_args(argv: list[str] | None = None) -> WorkerSettings:
    parser = _parser()
    args = parser.parse_args(argv)
    # A worker reads only its flags: the router renders every option explicitly.
    options = ModelOptions(model_options_from(args, parser, env={}))
    model: Path = args.model
    try:
        grammar, json_schema = default_constraint(options.given)
        rope, ui = rope_settings(options), ui_settings(options.given)
        overrides = kv_overrides(options.given)
        sampling = sampling_defaults(options)
    except ValueError as exc:  # an OptionError or a malformed --logit-bias
        parser.error(str(exc))
    names = [name.strip() for name in (args.alias or "").split(",") if name.strip()]

    slot_save_path = _folder(options, "slot-save-path", parser)
    media_path = _folder(options, "media-path", parser)
    rpc = _rpc(options.text("rpc"), parser)
    # Upstream's --reranking sets embedding=true and pooling=rank; the flag beats --pooling here,
    # since a worker's flags come rendered in table order, not in the order a user wrote them.
    reranking = options.flag("reranking")
    layout = kv_layout(options)  # the router's memory estimate reads the same layout
    return WorkerSettings(
        model=model,
        alias=min(names) if names else model.stem,
        aliases=tuple(sorted(set(names))),
        tags=tuple(sorted({tag.strip() for tag in (args.tags or "").split(",")} - {""})),
        api_keys=_comma_list(args.api_key or ""),
        cors_origins=_comma_list(args.cors_origins),
        allowed_hosts=_comma_list(args.allowed_hosts),
        host=args.host,
        port=args.port,
        ctx_size=layout.ctx_size,
        threads=_threads(options.text("threads")),
        threads_batch=_threads(options.text("threads-batch"))
        if "threads-batch" in options
        else None,
        batch_size=options.integer("batch-size"),
        ubatch_size=options.integer("ubatch-size"),
        n_gpu_layers=_gpu_layers(options.word("n-gpu-layers")),
        rpc=rpc,
        n_predict=options.integer("n-predict"),
        sampling=sampling,
        options_given=frozenset(options.given),
        chat_template=_chat_template(options, parser),
        jinja=options.flag("jinja"),
        chat_template_kwargs=_thinking_default(
            options.word("reasoning"),
            _effort_default(options.text("reasoning-effort"))
            | _preserve_default(options.text("reasoning-preserve"))
            | _template_kwargs(options.text("chat-template-kwargs"), parser),
        ),
        reasoning=options.word("reasoning"),
        reasoning_format=options.word("reasoning-format"),
        reasoning_budget=options.integer("reasoning-budget"),
        reasoning_budget_message=options.word("reasoning-budget-message"),
        use_mmap=options.flag("mmap"),
        use_mlock=options.flag("mlock"),
        flash_attn=options.word("flash-attn"),
        numa=options.text("numa"),
        cpus=_cpus(options, parser),
        priority=options.integer("prio"),
        parallel=layout.slots,
        kv_unified=layout.unified,
        kv_unified_per_slot=layout.per_slot,
        swa_full=options.flag("swa-full"),
        ctx_checkpoints=options.integer("ctx-checkpoints"),
        checkpoint_min_step=options.integer("checkpoint-min-step"),
        sleep_idle_seconds=_sleep_after(options.integer("sleep-idle-seconds")),
        embeddings=reranking or options.flag("embeddings"),
        pooling="rank" if reranking else options.text("pooling"),
        reranking=reranking,
        rope_freq_base=options.optional_real("rope-freq-base") or 0.0,
        rope=rope,
        check_tensors=options.flag("check-tensors"),
        kv_overrides=overrides,
        cache_type_k=layout.type_k,
        cache_type_v=layout.type_v,
        mmproj=args.mmproj,
        mmproj_offload=options.flag("mmproj-offload"),
        projector=projector_settings(options),
        endpoint_slots=options.flag("slots"),
        slot_save_path=slot_save_path,
        media_path=media_path,
        media_allow_private=options.flag("media-allow-private"),
        media_max_bytes=max_body_from(os.environ),
        cache_ram_mib=options.integer("cache-ram"),
        cache_idle_slots=options.flag("cache-idle-slots"),
        kv_persist=options.flag("kv-persist"),
        kv_cache_dir=options.path("kv-cache-dir") or default_kv_cache_dir(os.environ),
        kv_cache_max=options.integer("kv-cache-max"),
        lora=_scaled_files(options, "lora", "lora-scaled"),
        control_vectors=_scaled_files(options, "control-vector", "control-vector-scaled"),
        control_vector_layers=_layer_range(options.text("control-vector-layer-range")),
        lora_init_without_apply=options.flag("lora-init-without-apply"),
        speculative=speculative_settings(options),
        gpu=gpu_settings(options),
        metrics=options.flag("metrics"),
        context_shift=options.flag("context-shift"),
        verbose=options.flag("verbose"),
        keep=options.integer("keep"),
        grammar=grammar,
        json_schema=json_schema,
        reverse_prompt=options.strings("reverse-prompt"),
        ui_settings=ui,
        sse_ping_interval=options.real("sse-ping-interval"),
        embd_normalize=options.integer("embd-normalize"),
        cache_prompt=options.flag("cache-prompt"),
        spm_infill=options.flag("spm-infill"),
        cache_reuse=options.integer("cache-reuse"),
        prefill_assistant=options.flag("prefill-assistant"),
        ignored={n: options.given[n] for n in NOT_YET_SUPPORTED if n in options},
        no_effect_flags=other_flags_given(args),
    )
