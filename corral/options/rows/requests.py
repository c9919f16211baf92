"""llama-server flags of issue 29: request defaults, the projector, reasoning variables, RoPE and
YaRN scaling, metadata overrides, streams, the Web UI's settings.
"""

from __future__ import annotations

from corral.options.values import OptionSpec

__all__ = ["ROWS"]

ROWS: tuple[OptionSpec, ...] = (
    # llama-server flags (issue 29). Defaults of every request that says nothing itself.
    OptionSpec(
        "grammar",
        "str",
        help="GBNF grammar of every answer whose request names no grammar, `json_schema`, "
        "`response_format` or tools",
    ),
    OptionSpec(
        "grammar-file",
        "str",
        help="`grammar`, read from this file",
    ),
    OptionSpec(
        "json-schema",
        "str",
        spellings=("j",),
        help="JSON Schema (as JSON text) every such answer follows, instead of `grammar`",
    ),
    OptionSpec(
        "json-schema-file",
        "str",
        spellings=("jf",),
        help="`json-schema`, read from this file",
    ),
    # Repeatable, as llama-server: every -r a stop string, every -l TOKEN_ID(+/-)BIAS a bias.
    OptionSpec(
        "reverse-prompt",
        "strings",
        spellings=("r",),
        dest="reverse_prompt",
        help="stop string of every request that gives no `stop` of its own; repeatable, each "
        "kept, as llama-server",
    ),
    # The projector (libmtmd): its device, warm-up and image token bounds; "none" is the CPU.
    OptionSpec(
        "mmproj-device",
        "str",
        spellings=("mmdev",),
        help="device the projector runs on (`CPU`, `CUDA0`, … as ggml names them; `none`: the "
        "CPU); an unknown name fails the load, naming the devices there are",
    ),
    OptionSpec(
        "warmup",
        "bool",
        negatives=("no-warmup",),
        default="true",
        help="the projector's warm-up run when it loads (`no-warmup`: skip it); Corral runs no "
        "warm-up decode of the text model itself",
    ),
    OptionSpec(
        "image-min-tokens",
        "int",
        spellings=("LLAMA_ARG_IMAGE_MIN_TOKENS",),
        bound="positive",
        help="fewest tokens an image may take (vision models with dynamic resolution; default: "
        "the model's)",
    ),
    OptionSpec(
        "image-max-tokens",
        "int",
        spellings=("LLAMA_ARG_IMAGE_MAX_TOKENS",),
        bound="positive",
        help="most tokens an image may take (dynamic resolution; default: the model's)",
    ),
    OptionSpec(
        "mtmd-batch-max-tokens",
        "int",
        spellings=("LLAMA_ARG_MTMD_BATCH_MAX_TOKENS",),
        bound="positive",
        help="most image tokens per batch while encoding images (default: libmtmd's)",
    ),
    # The chat template's reasoning_effort variable ("default": the template's own).
    OptionSpec(
        "reasoning-effort",
        "str",
        spellings=("LLAMA_ARG_REASONING_EFFORT",),
        help="the chat template's `reasoning_effort` (`minimal`, `low`, `medium`, `high`, …; "
        "`default`: the template's own); `chat-template-kwargs` that set it win",
    ),
    # The template's preserve_reasoning: earlier turns keep their reasoning.
    OptionSpec(
        "reasoning-preserve",
        "bool",
        spellings=("LLAMA_ARG_REASONING_PRESERVE",),
        negatives=("no-reasoning-preserve", "LLAMA_ARG_NO_REASONING_PRESERVE"),
        help="the chat template's `preserve_reasoning`: earlier assistant turns keep their "
        "reasoning (templates that support it); off: `no-reasoning-preserve` (default on, "
        "as llama-server)",
    ),
    # Threads reading prompts (batches); unset: as many as --threads.
    OptionSpec(
        "threads-batch",
        "int",
        spellings=("tb",),
        help="threads that read prompts (batches); `0` or less: every logical CPU (default: as "
        "`threads`; set, the router does not share the cores with this model)",
    ),
    # RoPE and YaRN context scaling; unset: the model's own.
    OptionSpec(
        "rope-scaling",
        "choice",
        spellings=("LLAMA_ARG_ROPE_SCALING_TYPE",),
        literals=("none", "linear", "yarn"),
        help="RoPE frequency scaling method: `none`, `linear` or `yarn` (default: the model's, "
        "else linear)",
    ),
    OptionSpec(
        "rope-scale",
        "float",
        spellings=("LLAMA_ARG_ROPE_SCALE",),
        bound="positive",
        help="RoPE context scaling factor: expands the context N times (`rope-freq-scale` = "
        "1/N; give one of the two)",
    ),
    OptionSpec(
        "rope-freq-scale",
        "float",
        spellings=("LLAMA_ARG_ROPE_FREQ_SCALE",),
        bound="positive",
        help="RoPE frequency scaling factor (default: the model's)",
    ),
    OptionSpec(
        "yarn-orig-ctx",
        "int",
        spellings=("LLAMA_ARG_YARN_ORIG_CTX",),
        bound="non_negative",
        help="YaRN: the model's original context size (`0`: its training context)",
    ),
    OptionSpec(
        "yarn-ext-factor",
        "float",
        spellings=("LLAMA_ARG_YARN_EXT_FACTOR",),
        help="YaRN: extrapolation mix factor (`0`: full interpolation; default: the model's)",
    ),
    OptionSpec(
        "yarn-attn-factor",
        "float",
        spellings=("LLAMA_ARG_YARN_ATTN_FACTOR",),
        help="YaRN: attention magnitude scale (default: the model's)",
    ),
    OptionSpec(
        "yarn-beta-slow",
        "float",
        spellings=("LLAMA_ARG_YARN_BETA_SLOW",),
        help="YaRN: high correction dimension or alpha (default: the model's)",
    ),
    OptionSpec(
        "yarn-beta-fast",
        "float",
        spellings=("LLAMA_ARG_YARN_BETA_FAST",),
        help="YaRN: low correction dimension or beta (default: the model's)",
    ),
    OptionSpec(
        "check-tensors",
        "bool",
        default="false",
        dest="check_tensors",
        help="check the model's tensor data for invalid values while loading (slower)",
    ),
    # GGUF metadata replaced as the model loads: KEY=int|float|bool|str:VALUE, comma-separated.
    OptionSpec(
        "override-kv",
        "list",
        help="GGUF metadata to replace as the model loads: `KEY=TYPE:VALUE` with TYPE `int`, "
        "`float`, `bool` or `str`, comma-separated or repeated "
        "(`tokenizer.ggml.add_bos_token=bool:false`)",
    ),
    # Whether requests that do not say reuse their slot's cached prompt (their cache_prompt).
    OptionSpec(
        "cache-prompt",
        "bool",
        spellings=("LLAMA_ARG_CACHE_PROMPT",),
        negatives=("no-cache-prompt", "LLAMA_ARG_NO_CACHE_PROMPT"),
        default="true",
        dest="cache_prompt",
        help="requests that give no `cache_prompt` reuse what their slot's cache holds of their "
        "prompt (default on)",
    ),
    # Whether a last assistant message is continued when the request does not say.
    OptionSpec(
        "prefill-assistant",
        "bool",
        spellings=("LLAMA_ARG_PREFILL_ASSISTANT",),
        negatives=("no-prefill-assistant", "LLAMA_ARG_NO_PREFILL_ASSISTANT"),
        default="true",
        dest="prefill_assistant",
        help="continue a chat's last assistant message when the request does not say "
        "(`continue_final_message`); off: it is a whole turn and the model answers after "
        "it (default on)",
    ),
    # How pooled embeddings are normalised (worker/engine/embedding_context.py); -1: not.
    OptionSpec(
        "embd-normalize",
        "int",
        bound="non_negative",
        literals=("-1",),
        default="2",
        dest="embd_normalize",
        help="how pooled embeddings are normalised unless a request's `embd_normalize` says: "
        "`-1` none, `0` largest magnitude to 32760, `1` taxicab, `2` Euclidean, more: "
        "p-norm",
    ),
    # Seconds a stream may stay silent before an SSE comment keeps it open; 0 or less: never.
    OptionSpec(
        "sse-ping-interval",
        "int",
        spellings=("LLAMA_ARG_SSE_PING_INTERVAL",),
        default="30",
        dest="sse_ping_interval",
        help="seconds a stream may stay silent (a prompt being read, a request waiting for a "
        "slot) before an SSE comment (`:`) keeps the connection open; `-1`: never",
    ),
    # The Web UI's settings, handed out by /props (llama-server's --webui-config).
    OptionSpec(
        "ui-config",
        "str",
        spellings=("webui-config", "LLAMA_ARG_UI_CONFIG"),
        help="settings for the Web UI as a JSON object, answered as `/props`'s `ui_settings` "
        "(the router's and the model's)",
    ),
    OptionSpec(
        "ui-config-file",
        "str",
        spellings=("webui-config-file", "LLAMA_ARG_UI_CONFIG_FILE"),
        help="`ui-config`, read from this file",
    ),
)
