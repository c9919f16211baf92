"""What the worker serves and keeps: sleep, slots, media, prompt caches, metrics, context
shift, embeddings.
"""

from __future__ import annotations

from corral.options.values import OptionSpec

__all__ = ["ROWS"]

ROWS: tuple[OptionSpec, ...] = (
    # Upstream rejects 0 and anything below -1; -1 means never.
    OptionSpec(
        "sleep-idle-seconds",
        "int",
        bound="positive",
        literals=("-1",),
        default="-1",
        help="free the weights after this many idle seconds (status `sleeping`); the next "
        "request wakes the model; `-1` = never",
    ),
    OptionSpec(
        "slots",
        "bool",
        spellings=("LLAMA_ARG_ENDPOINT_SLOTS",),
        negatives=("no-slots", "LLAMA_ARG_NO_ENDPOINT_SLOTS"),
        default="true",
        dest="endpoint_slots",
        help="serve `GET /slots` (`no-slots`: 501)",
    ),
    OptionSpec(
        "slot-save-path",
        "str",
        help="folder for `POST /slots/{id}?action=save|restore` files (without it: 501)",
    ),
    # Local media: file:// URLs read from this folder only (worker/media/local_files.py).
    OptionSpec(
        "media-path",
        "str",
        help="folder that `file://` media URLs are read from, by a path relative to it "
        "(`file://photos/cat.png`); none outside it (no `..`, no link out); without it: "
        "400. A file larger than the request's media may take (`--max-body` in all) is "
        "refused unread. Checked at startup; in a preset, relative to the INI file",
    ),
    # Corral: URL media may name private hosts (worker/media/downloads.py); off, refused.
    OptionSpec(
        "media-allow-private",
        "bool",
        default="false",
        dest="media_allow_private",
        help="Corral: let `http(s)` media URLs reach private, loopback and link-local addresses "
        "(`localhost`, `10.x`, `192.168.x`, `169.254.169.254`…); without it, a URL or a "
        "redirect to one is refused (400) unfetched",
    ),
    # Copies of slot caches in host memory, in MiB; -1: no cap, 0: none
    # (worker/cache/prompt_cache.py).
    OptionSpec(
        "cache-ram",
        "int",
        spellings=("cram", "LLAMA_ARG_CACHE_RAM"),
        bound="non_negative",
        literals=("-1",),
        default="8192",
        dest="cache_ram_mib",
        help="most host memory (MiB) the copies of slot caches may take (`-1`: no cap, `0`: "
        "none, and idle slots keep their caches); a prompt that shares more with a copy "
        "than with its slot's cache gets the copy back. Default 8192, as llama-server",
    ),
    OptionSpec(
        "cache-idle-slots",
        "bool",
        spellings=("LLAMA_ARG_CACHE_IDLE_SLOTS",),
        negatives=("no-cache-idle-slots",),
        default="true",
        dest="cache_idle_slots",
        help="with one KV cache shared by the slots (automatic slots, `--kv-unified`), move the "
        "idle slots' caches to those copies each time a generation starts, so that no "
        "stream reads past their cells (needs `--cache-ram`)",
    ),
    # Corral's own: slot caches kept across any stop (docs/serving.md).
    OptionSpec(
        "kv-persist",
        "bool",
        negatives=("no-kv-persist",),
        default="true",
        dest="kv_persist",
        help="Corral: write each slot's KV cache at the end of each request, and each copy "
        "`--cache-ram` keeps, to `--kv-cache-dir` in the background (and the slots' at a stop "
        "or sleep), and restore one for a prompt that starts like it, after any stop",
    ),
    # Corral's own, which the router sets: docs/serving.md, "Scheduling".
    OptionSpec(
        "courtesy-slot",
        "bool",
        negatives=("no-courtesy-slot",),
        default="false",
        help="Corral: decode one sequence more than `--parallel`, shown in no slot list, for a "
        "request the router would otherwise keep waiting behind another caller's (on for every "
        "model with `--schedule swap`, off with `fifo`; it costs one slot's share of the KV "
        "cache, or none with one cache shared by the slots)",
    ),
    OptionSpec(
        "kv-cache-dir",
        "str",
        help="Corral: where saved KV caches go (default `$XDG_CACHE_HOME/corral/kv`, else "
        "`~/.cache/corral/kv`)",
    ),
    OptionSpec(
        "kv-cache-max",
        "size",
        default="4294967296",
        dest="kv_cache_max",
        help="Corral: most disk the saved KV caches of all models may take (`4G` default); "
        "least recently used go first",
    ),
    OptionSpec(
        "metrics",
        "bool",
        spellings=("LLAMA_ARG_ENDPOINT_METRICS",),
        default="false",
        dest="metrics",
        help="serve the model's Prometheus `/metrics` (`llamacpp:*`; 501 without it)",
    ),
    OptionSpec(
        "context-shift",
        "bool",
        spellings=("LLAMA_ARG_CONTEXT_SHIFT",),
        negatives=("no-context-shift",),
        default="false",
        dest="context_shift",
        help="when a generation fills the context, drop the older half of what follows the kept "
        "prompt tokens and go on (off by default: the generation stops at the context's "
        "end; a prompt with media always stops there, as llama-server with an mmproj)",
    ),
    # Tokens of the prompt a context shift keeps; -1: all of it.
    OptionSpec(
        "keep",
        "int",
        literals=("-1",),
        bound="non_negative",
        default="0",
        dest="keep",
        help="prompt tokens a context shift keeps (after BOS); `-1` = the whole prompt; a "
        "request's `n_keep` overrides it",
    ),
    # Answers carry llama-server's __verbose debug object (a request's verbose overrides it).
    OptionSpec(
        "verbose",
        "bool",
        spellings=("v", "log-verbose"),
        default="false",
        dest="verbose",
        help="whole answers carry llama-server's `__verbose` object (the prompt as text, "
        "settings, counts); a request's `verbose` overrides it",
    ),
    OptionSpec(
        "embeddings",
        "bool",
        spellings=("embedding", "LLAMA_ARG_EMBEDDINGS"),
        default="false",
        help="serve `/v1/embeddings` and `/embedding` (501 without it; the router turns it on "
        "for a GGUF that declares a pooling type)",
    ),
    OptionSpec(
        "pooling",
        "choice",
        spellings=("LLAMA_ARG_POOLING",),
        literals=("none", "mean", "cls", "last", "rank"),
        help="embedding pooling",
    ),
    OptionSpec(
        "reranking",
        "bool",
        spellings=("rerank", "LLAMA_ARG_RERANKING"),
        default="false",
        dest="reranking",
        help="serve `/v1/rerank`, `/rerank`, `/v1/reranking` and `/reranking` (501 without it); "
        "implies `embeddings` and `pooling = rank`, whatever `pooling` says",
    ),
    OptionSpec(
        "webui",
        "bool",
        spellings=("ui", "LLAMA_ARG_UI"),
        negatives=("no-webui", "no-ui", "LLAMA_ARG_NO_UI"),
        no_effect="not implemented yet",
        help="accepted for llama-server presets; the worker logs that it does not act on it",
    ),
)
