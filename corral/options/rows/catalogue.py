"""Which file a model is and what it is called, and the keys only the router reads (upstream's
preset-only keys, then Corral's own).
"""

from __future__ import annotations

from corral.options.values import OptionSpec

__all__ = ["ROWS"]

ROWS: tuple[OptionSpec, ...] = (
    # Which file and which names: never passed through, the catalogue entry carries them.
    OptionSpec(
        "model",
        "str",
        "model",
        ("m", "LLAMA_ARG_MODEL"),
        help="GGUF file of a model the section defines (relative paths: to the INI file)",
    ),
    OptionSpec(
        "mmproj",
        "str",
        "model",
        ("mm", "LLAMA_ARG_MMPROJ"),
        help="multimodal projector file (images, audio; relative paths: to the INI file); "
        "overrides the one found next to the model",
    ),
    # Whether a projector found beside the model is used; a named ``mmproj`` always is.
    OptionSpec(
        "mmproj-auto",
        "bool",
        "model",
        ("LLAMA_ARG_MMPROJ_AUTO",),
        negatives=("no-mmproj", "no-mmproj-auto"),
        default="true",
        help="pair a model with the projector found beside it in the hub cache or "
        "`--models-dir` (default on; an explicit `mmproj` is always used)",
    ),
    OptionSpec(
        "hf-repo",
        "str",
        "model",
        ("hf", "hfr", "LLAMA_ARG_HF_REPO"),
        help="hub-cache model `org/repo[:TAG]` (must be downloaded already)",
    ),
    OptionSpec(
        "hf-file",
        "str",
        "model",
        ("hff", "LLAMA_ARG_HF_FILE"),
        help="with `hf-repo`: the file inside the repository, instead of a tag",
    ),
    OptionSpec(
        "alias",
        "str",
        "model",
        ("a", "LLAMA_ARG_ALIAS"),
        help="other names the model answers to, comma-separated",
    ),
    OptionSpec(
        "tags",
        "str",
        "model",
        ("LLAMA_ARG_TAGS",),
        help="labels listed in `/models`, comma-separated",
    ),
    # Upstream's preset-only keys, then Corral's own (ttl, pin).
    OptionSpec(
        "load-on-startup",
        "bool",
        "preset",
        ("__PRESET_LOAD_ON_STARTUP",),
        default="false",
        help="load when the router starts (first start only, not on reloads)",
    ),
    OptionSpec(
        "stop-timeout",
        "float",
        "preset",
        ("__PRESET_STOP_TIMEOUT",),
        bound="non_negative",
        default="10",
        help="seconds between the exit command, SIGTERM and SIGKILL when stopping",
    ),
    OptionSpec(
        "dedup-cache-models",
        "bool",
        "preset",
        ("__PRESET_DEDUP_CACHE_MODELS",),
        default="false",
        help="hide the plain cache entry of the file this section serves (it still answers to "
        "its name)",
    ),
    OptionSpec(
        "ttl",
        "float",
        "preset",
        bound="positive",
        help="Corral: unload after this many idle seconds",
    ),
    OptionSpec(
        "pin",
        "bool",
        "preset",
        default="false",
        help="Corral: never evicted to make room for another model",
    ),
    OptionSpec(
        "min-residency",
        "float",
        "preset",
        bound="non_negative",
        default="1",
        help="Corral: seconds a model stays loaded after its load before it may be evicted "
        "for another (a request waiting past `--schedule-wait-max` overrides it; ignored with "
        "`--schedule fifo`)",
    ),
    OptionSpec(
        "replicas",
        "int",
        "preset",
        bound="positive",
        default="1",
        help="Corral: worker copies of this model run at most, each placed like a model and "
        "counted as one by `--models-max`; a conversation stays on its copy (docs/scaling.md)",
    ),
    OptionSpec(
        "replicas-max",
        "int",
        "preset",
        bound="non_negative",
        default="0",
        help="Corral: with `--schedule swap`, a model whose waiting requests outnumber its slots "
        "for 5 s gets another copy where there is room, up to this many copies in all; such a "
        "copy is stopped once idle for 30 s (0: no more than `replicas`; docs/scaling.md)",
    ),
    OptionSpec(
        "memory",
        "size",
        "preset",
        help="Corral: what the model holds in host memory, for `--models-memory-max` (instead "
        "of measuring its worker; GPU memory is measured per device, never declared)",
    ),
    # The router's tools this model's chats are offered (docs/tools.md "Per-model tool sets").
    OptionSpec(
        "tools",
        "str",
        "preset",
        help="Corral: the router's tools (built-in or `<server>_<tool>`, comma-separated, or "
        "`all`) the Web UI offers this model; names the router does not offer are ignored",
    ),
)
