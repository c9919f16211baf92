"""What each per-model option means: one line per option of :data:`corral.options.OPTIONS`.

One source for ``corral serve --help`` and docs/configuration.md (scripts/gen_config_docs.py),
which stops when an option has no line here, so a new option cannot reach the code without
reaching both. Written as Markdown (backticks); the terminal help drops the backticks.
"""

from __future__ import annotations

__all__ = ["MODEL_OPTION_HELP"]

# Every option of OPTIONS, by canonical name.
MODEL_OPTION_HELP: dict[str, str] = {
    "model": "GGUF file of a model the section defines (relative paths: to the INI file)",
    "mmproj": "multimodal projector file; recorded and shown in `/models`, not used by workers yet",
    "hf-repo": "hub-cache model `org/repo[:TAG]` (must be downloaded already)",
    "hf-file": "with `hf-repo`: the file inside the repository, instead of a tag",
    "alias": "other names the model answers to, comma-separated",
    "tags": "labels listed in `/models`, comma-separated",
    "load-on-startup": "load when the router starts (first start only, not on reloads)",
    "stop-timeout": "seconds between the exit command, SIGTERM and SIGKILL when stopping",
    "dedup-cache-models": "hide the plain cache entry of the file this section serves (it "
    "still answers to its name)",
    "ttl": "Corral: unload after this many idle seconds",
    "pin": "Corral: never evicted to make room for another model",
    "memory": "Corral: what the model holds, for `--models-memory-max` (instead of measuring "
    "its worker; declare GPU memory here)",
    "ctx-size": "context size in tokens, shared evenly by the slots (llama.cpp rounds it up "
    "to a multiple of 256); `0` = the model's training context",
    "threads": "CPU threads",
    "batch-size": "logical batch size",
    "ubatch-size": "physical batch size (at most the logical one)",
    "n-gpu-layers": "layers offloaded to the GPU of a GPU build; `auto`/`all` = every layer",
    "n-predict": "default token budget of a request; `-1` = up to the context",
    "parallel": "slots served together by continuous batching",
    "temp": "default temperature",
    "seed": "default seed; `-1` = random",
    "chat-template": "template name (`chatml`, `llama-3`, `gemma`, …) or Jinja text, instead "
    "of the GGUF's",
    "jinja": "accepted for llama-server presets; the worker logs that it does not act on it",
    "mmap": "map the weights from the file (`no-mmap` = read them into memory)",
    "mlock": "lock the weights in RAM (needs a memlock limit, e.g. `LimitMEMLOCK=infinity`)",
    "flash-attn": "flash attention",
    "cache-type-k": "KV cache type of K",
    "cache-type-v": "KV cache type of V",
    "rope-freq-base": "RoPE base frequency",
    "sleep-idle-seconds": "free the weights after this many idle seconds (status `sleeping`); "
    "the next request wakes the model; `-1` = never",
    "slots": "serve the model's `/slots` (on by default; `no-slots`: 501, as llama-server)",
    "metrics": "serve the model's Prometheus `/metrics` (`llamacpp:*`; 501 without it)",
    "context-shift": "when a generation fills the context, drop the older half of what follows "
    "the kept prompt tokens and go on (off by default: the generation stops at the context's end)",
    "keep": "prompt tokens a context shift keeps (after BOS); `-1` = the whole prompt; a request's "
    "`n_keep` overrides it",
    "embeddings": "serve `/v1/embeddings` and `/embedding` (501 without it)",
    "pooling": "embedding pooling",
    "reranking": "serve `/v1/rerank`, `/rerank`, `/v1/reranking` and `/reranking` (501 without "
    "it); implies `embeddings` and `pooling = rank`, whatever `pooling` says",
    "webui": "accepted for llama-server presets; the worker logs that it does not act on it",
}
