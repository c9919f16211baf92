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
    "mmproj": "multimodal projector file (images, audio; relative paths: to the INI file); "
    "overrides the one found next to the model",
    "mmproj-auto": "pair a model with the projector found beside it in the hub cache or "
    "`--models-dir` (default on; an explicit `mmproj` is always used)",
    "mmproj-offload": "run the projector on the GPU when there is one (default on)",
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
    "chat-template": "one of llama.cpp's built-in template names (`chatml`, `llama3`, `gemma`, "
    "…) or Jinja text, instead of the GGUF's (docs/templates.md)",
    "chat-template-file": "Jinja chat template read from this file, instead of the GGUF's",
    "chat-template-kwargs": "JSON object of extra template variables, e.g. "
    '`{"enable_thinking": false}`; a request\'s `chat_template_kwargs` win over it',
    "jinja": "render chat templates with Jinja as llama-server does (default on); `no-jinja` = "
    "llama.cpp's built-in templates only, no tools",
    "reasoning": "thinking on or off for templates that switch it (`enable_thinking`); `auto` = "
    "the template's default; `--chat-template-kwargs` wins",
    "reasoning-format": "where thinking goes: `none` (left in the content), `deepseek` or "
    "`auto` (`reasoning_content`), `deepseek-legacy` (both); see docs/tool-calls.md",
    "reasoning-budget": "tokens of thinking before the end tag is forced: -1 unlimited, 0 none",
    "mmap": "map the weights from the file (`no-mmap` = read them into memory)",
    "mlock": "lock the weights in RAM (needs a memlock limit, e.g. `LimitMEMLOCK=infinity`)",
    "flash-attn": "flash attention",
    "cache-type-k": "KV cache type of K",
    "cache-type-v": "KV cache type of V",
    "rope-freq-base": "RoPE base frequency",
    "sleep-idle-seconds": "free the weights after this many idle seconds (status `sleeping`); "
    "the next request wakes the model; `-1` = never",
    "slots": "serve `GET /slots` (`no-slots`: 501)",
    "slot-save-path": "folder for `POST /slots/{id}?action=save|restore` files (without it: 501)",
    "kv-persist": "Corral: save each slot's KV cache when the worker stops gracefully "
    "(eviction, ttl, unload) or sleeps, and restore it for a prompt that extends it",
    "kv-cache-dir": "Corral: where saved KV caches go (default `$XDG_CACHE_HOME/corral/kv`, "
    "else `~/.cache/corral/kv`)",
    "kv-cache-max": "Corral: most disk the saved KV caches of all models may take (`4G` "
    "default); least recently used go first",
    "embeddings": "serve `/v1/embeddings` and `/embedding` (501 without it)",
    "pooling": "embedding pooling",
    "reranking": "serve `/v1/rerank`, `/rerank`, `/v1/reranking` and `/reranking` (501 without "
    "it); implies `embeddings` and `pooling = rank`, whatever `pooling` says",
    "webui": "accepted for llama-server presets; the worker logs that it does not act on it",
    "lora": "LoRA adapter files applied at scale 1, comma-separated or the flag repeated; ids "
    "count from 0 in this order, then `lora-scaled`'s (docs/api.md, LoRA adapters)",
    "lora-scaled": "LoRA adapters with their scale, `FILE:SCALE`, comma-separated or the flag "
    "repeated",
    "lora-init-without-apply": "load the LoRA adapters at scale 0, to be applied by "
    "`POST /lora-adapters` or a request's `lora` field",
}
