"""What each per-model option means: one line per option of :data:`corral.options.table.OPTIONS`.

One source for ``corral serve --help`` and docs/configuration.md (scripts/gen_config_docs.py),
which stops when an option has no line here, so a new option cannot reach the code without
reaching both. Written as Markdown (backticks); the terminal help drops the backticks.
"""

from __future__ import annotations

from corral.sampling_fields import sampling_option_help

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
    "memory": "Corral: what the model holds in host memory, for `--models-memory-max` "
    "(instead of measuring its worker; GPU memory is measured per device, never declared)",
    "tools": "Corral: the router's tools (built-in or `<server>_<tool>`, comma-separated, or "
    "`all`) the Web UI offers this model; names the router does not offer are ignored",
    "ctx-size": "context size in tokens (llama.cpp rounds it up to a multiple of 256); shared "
    "evenly by the slots unless their KV cache is unified. Default `0`, as llama-server "
    "(common/common.h `n_ctx = 0`): the model's training context for each slot",
    "threads": "CPU threads. Default as llama-server (common/common.cpp "
    "`common_cpu_get_num_math`): the physical cores (the performance cores of an Intel hybrid "
    "CPU); `0` or less: every logical CPU",
    "batch-size": "logical batch size: prompt tokens per decode. Default 2048, as llama-server "
    "(common/common.h `n_batch`)",
    "ubatch-size": "physical batch size (at most the logical one). Default 512, as llama-server "
    "(common/common.h `n_ubatch`)",
    "n-gpu-layers": "most layers kept in GPU memory: a number, `all`, or `auto` (the default, as "
    "llama-server: every layer, fewer when `fit` finds they do not fit); a CPU build keeps "
    "every layer on the CPU whatever it says",
    "rpc": "ggml RPC servers (`HOST:PORT`, comma-separated or the flag repeated) that take the "
    "offloaded layers (`corral rpc-server` on the other machines; docs/scaling.md); with it, "
    "`n-gpu-layers` defaults to `all`. Trusted networks only: the protocol has no authentication",
    "n-predict": "default token budget of a request; `-1` = up to the context",
    "parallel": "slots served together by continuous batching. Default `-1` (automatic), as "
    "llama-server (tools/server/server.cpp): 4 slots sharing one unified KV cache",
    "numa": "NUMA optimizations, as llama-server's --numa: distribute (spread over all nodes), "
    "isolate (the node the worker started on) or numactl (the CPU map numactl gives); drop the "
    "page cache first if the model ran without it",
    "spm-infill": "/infill lays the prompt out suffix first (Suffix/Prefix/Middle), as some "
    "models were trained, instead of Prefix/Suffix/Middle",
    "cpu-mask": "CPU affinity as llama-server's -C: a hex mask (`0x` optional), bit n for CPU n; "
    "with `cpu-range` it adds up to one set that every thread of the worker is pinned to "
    "before the model loads",
    "cpu-range": "CPU affinity as llama-server's -Cr: `lo-hi`, either end optional (`4-`: from "
    "CPU 4 to the last); adds to `cpu-mask`",
    "prio": "priority of the worker's threads, as llama-server's --prio: -1 low (nice 5), 0 "
    "normal (unchanged), 1 medium (-5), 2 high (-10), 3 realtime (-20); raising it needs the "
    "privilege to, else a warning is logged and it stays",
    "control-vector": "control vector files (GGUF, `direction.N` tensors), added to the "
    "hidden state at scale 1",
    "control-vector-scaled": "control vector files with their scale, `FILE:SCALE`",
    "control-vector-layer-range": "the first and last layer (N of `direction.N`) the control "
    "vectors apply to; default 1 to the model's last",
    "cache-reuse": "the shortest run of tokens a prompt reuses from further on in its slot's "
    "cache by shifting it into place (0: none), as llama-server's --cache-reuse; a request's "
    "n_cache_reuse overrides it",
    "kv-unified-per-slot": "the most tokens one slot may hold (0: no cap); without "
    "--ctx-size the context is sized to the slots times it, as llama-server",
    "swa-full": "a sliding-window model (gemma-3, gpt-oss) keeps its whole context in the window "
    "layers' cache too, as llama-server's --swa-full: more memory, and any earlier prompt can be "
    "resumed; without it the cache holds the window, and checkpoints cover resumes",
    "ctx-checkpoints": "the most context checkpoints a slot keeps (0: none): copies of the "
    "part of its state that cannot be cut back (a sliding window, a recurrent state), taken "
    "near the end of each prompt, so a next prompt that differs earlier resumes from one",
    "checkpoint-min-step": "the fewest tokens between two checkpoints of a slot, once it "
    "holds as many as --ctx-checkpoints allows (0: no minimum)",
    "kv-unified": "one KV cache shared by all slots, each of which may use the whole context "
    "(`-kvu`); default off, but always on with automatic slots, as llama-server",
    # Sampling: the help of each sampling option is in its row (corral/sampling_fields.py).
    **sampling_option_help(),
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
    "reasoning-budget-message": "text forced before the end tag when the reasoning budget is "
    "spent (a request's `reasoning_budget_message` wins)",
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
    "media-path": "folder that `file://` media URLs are read from, by a path relative to it "
    "(`file://photos/cat.png`); none outside it (no `..`, no link out); without it: 400. "
    "A file larger than the request's media may take (`--max-body` in all) is refused unread. "
    "Checked at startup; in a preset, relative to the INI file",
    "media-allow-private": "Corral: let `http(s)` media URLs reach private, loopback and "
    "link-local addresses (`localhost`, `10.x`, `192.168.x`, `169.254.169.254`…); without it, "
    "a URL or a redirect to one is refused (400) unfetched",
    "cache-ram": "most host memory (MiB) the copies of slot caches may take (`-1`: no cap, "
    "`0`: none, and idle slots keep their caches); a prompt that shares more with a copy than "
    "with its slot's cache gets the copy back. Default 8192, as llama-server",
    "cache-idle-slots": "with one KV cache shared by the slots (automatic slots, "
    "`--kv-unified`), move the idle slots' caches to those copies each time a generation starts, "
    "so that no stream reads past their cells (needs `--cache-ram`)",
    "kv-persist": "Corral: save each slot's KV cache when the worker stops gracefully "
    "(eviction, ttl, unload) or sleeps, and restore it for a prompt that extends it",
    "kv-cache-dir": "Corral: where saved KV caches go (default `$XDG_CACHE_HOME/corral/kv`, "
    "else `~/.cache/corral/kv`)",
    "kv-cache-max": "Corral: most disk the saved KV caches of all models may take (`4G` "
    "default); least recently used go first",
    "metrics": "serve the model's Prometheus `/metrics` (`llamacpp:*`; 501 without it)",
    "verbose": "whole answers carry llama-server's `__verbose` object (the prompt as text, "
    "settings, counts); a request's `verbose` overrides it",
    "context-shift": "when a generation fills the context, drop the older half of what follows "
    "the kept prompt tokens and go on (off by default: the generation stops at the context's end; "
    "a prompt with media always stops there, as llama-server with an mmproj)",
    "keep": "prompt tokens a context shift keeps (after BOS); `-1` = the whole prompt; a request's "
    "`n_keep` overrides it",
    "embeddings": "serve `/v1/embeddings` and `/embedding` (501 without it; the router turns it "
    "on for a GGUF that declares a pooling type)",
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
    "model-draft": "draft model GGUF for speculative decoding (relative paths in a preset: to "
    "the INI file); with `spec-draft-hf`, the file inside that repository",
    "spec-draft-hf": "draft model from the hub cache, `org/repo[:TAG]` (must be downloaded "
    "already)",
    "spec-type": "speculative decoding types, comma-separated: `draft-simple` (a draft model, "
    "the default when one is given), `ngram-simple` (prompt lookup), `ngram-map-k`, "
    "`ngram-map-k4v`, `ngram-mod` and `ngram-cache` run; the other `draft-*` types fail the load",
    "spec-draft-n-max": "most tokens guessed per step",
    "spec-draft-n-min": "fewest tokens a draft model's guess may have to be tried",
    "spec-draft-p-min": "a draft model guesses only while its top candidate's probability is "
    "at least this",
    "ctx-size-draft": "the draft model's context size; `0` = the model's own `ctx-size`",
    "spec-draft-ngl": "draft model layers offloaded to the GPU of a GPU build; `auto`/`all` = "
    "every layer",
    "spec-draft-threads": "CPU threads of the draft model; default: the model's",
    "spec-synth-len": "benchmarks only: keep guesses at random for this mean accepted length "
    "(counting the sampled token) instead of checking them; the text is not the model's",
    "spec-synth-rates": "benchmarks only: keep guesses at random, at these comma-separated "
    "rates per position (one per `spec-draft-n-max`, not increasing)",
    "spec-ngram-simple-size-n": "`ngram-simple`: tokens looked up in the history",
    "spec-ngram-simple-size-m": "`ngram-simple`: most tokens guessed from a match",
    "spec-default": "llama-server's default speculative decoding: `ngram-mod` added to "
    "`spec-type` (with its default settings unless `spec-ngram-mod-*` are given)",
    "lookup-cache-static": "`ngram-cache`: a static lookup cache file (2-gram counts, as "
    "llama.cpp's `llama-lookup-create` writes them); read when the model loads",
    "lookup-cache-dynamic": "`ngram-cache`: a dynamic lookup cache file (1- to 4-gram counts); "
    "read when the model loads, never written",
    "spec-ngram-map-k-size-n": "`ngram-map-k`: tokens looked up in the history (1-1024)",
    "spec-ngram-map-k-size-m": "`ngram-map-k`: most tokens guessed from a match (1-1024)",
    "spec-ngram-map-k-min-hits": "read by llama-server for `ngram-map-k` too, which guesses "
    "by key only and never looks at it",
    "spec-ngram-map-k4v-size-n": "`ngram-map-k4v`: tokens looked up in the history (1-1024)",
    "spec-ngram-map-k4v-size-m": "`ngram-map-k4v`: tokens of each m-gram counted and guessed "
    "(1-1024)",
    "spec-ngram-map-k4v-min-hits": "`ngram-map-k4v`: times a key must be seen before it guesses",
    "spec-ngram-mod-n-match": "`ngram-mod`: tokens hashed to look up the next one (0-1024)",
    "spec-ngram-mod-n-max": "`ngram-mod`: most tokens guessed (0-1024)",
    "spec-ngram-mod-n-min": "`ngram-mod`: fewest tokens guessed; a shorter guess is dropped "
    "(0-1024)",
    # GPU (issue 26)
    "device": "devices to offload to, comma-separated ggml names (`CUDA0,CUDA1`; `none` = "
    "don't offload); `--list-devices` lists them. Default: every GPU",
    "fit": "`on` (default, as llama-server): before loading, measure the model with llama.cpp's "
    "own `--fit` (common/fit.cpp) and shrink what was left unset (the context toward `fit-ctx` "
    "when `ctx-size` is unset, then the GPU layers when `n-gpu-layers` is unset) until each "
    "device keeps its `fit-target` free; `off`: load as told",
    "fit-target": "MiB each device keeps free when fitting, comma-separated per device (one "
    "value: every device). Default 1024, as llama-server",
    "fit-ctx": "smallest context `fit` may shrink an unset `ctx-size` to. Default 4096, as "
    "llama-server",
    "split-mode": "how a model spans several GPUs: `none` (one GPU, `main-gpu`), `layer` "
    "(default: layers and KV split, pipelined), `row` (weights split by rows), `tensor` "
    "(experimental)",
    "tensor-split": "share of the model each GPU takes, comma-separated proportions (`3,1`)",
    "main-gpu": "the GPU with `split-mode = none`, or the one for intermediate results and KV "
    "with `row`. Default 0",
    "override-tensor": "buffer type of the tensors whose names match, `PATTERN=TYPE` "
    "comma-separated (`exps=CPU`)",
    "cpu-moe": "keep every Mixture-of-Experts weight on the CPU",
    "n-cpu-moe": "keep the Mixture-of-Experts weights of the first N layers on the CPU",
    "n-cpu-ffn": "keep the dense feed-forward weights of the first N layers on the CPU (dense "
    "models; MoE experts: `n-cpu-moe`)",
    "kv-offload": "KV cache on the GPU with its layers (default on; `no-kv-offload`: in host "
    "memory)",
    "op-offload": "run host tensors' operations on the GPU (default on)",
    "spec-draft-device": "devices the draft model offloads to, as `device` (default: the model's)",
    # llama-server flags (issue 29).
    "grammar": "GBNF grammar of every answer whose request names no grammar, `json_schema`, "
    "`response_format` or tools",
    "grammar-file": "`grammar`, read from this file",
    "json-schema": "JSON Schema (as JSON text) every such answer follows, instead of `grammar`",
    "json-schema-file": "`json-schema`, read from this file",
    "reverse-prompt": "stop string of every request that gives no `stop` of its own; "
    "repeatable, each kept, as llama-server",
    "ui-config": "settings for the Web UI as a JSON object, answered as `/props`'s "
    "`ui_settings` (the router's and the model's)",
    "ui-config-file": "`ui-config`, read from this file",
    "sse-ping-interval": "seconds a stream may stay silent (a prompt being read, a request "
    "waiting for a slot) before an SSE comment (`:`) keeps the connection open; `-1`: never",
    "embd-normalize": "how pooled embeddings are normalised unless a request's `embd_normalize` "
    "says: `-1` none, `0` largest magnitude to 32760, `1` taxicab, `2` Euclidean, more: p-norm",
    "mmproj-device": "device the projector runs on (`CPU`, `CUDA0`, … as ggml names them; "
    "`none`: the CPU); an unknown name fails the load, naming the devices there are",
    "warmup": "the projector's warm-up run when it loads (`no-warmup`: skip it); Corral runs no "
    "warm-up decode of the text model itself",
    "image-min-tokens": "fewest tokens an image may take (vision models with dynamic "
    "resolution; default: the model's)",
    "image-max-tokens": "most tokens an image may take (dynamic resolution; default: the model's)",
    "mtmd-batch-max-tokens": "most image tokens per batch while encoding images (default: "
    "libmtmd's)",
    "rope-scaling": "RoPE frequency scaling method: `none`, `linear` or `yarn` (default: the "
    "model's, else linear)",
    "rope-scale": "RoPE context scaling factor: expands the context N times (`rope-freq-scale` "
    "= 1/N; give one of the two)",
    "rope-freq-scale": "RoPE frequency scaling factor (default: the model's)",
    "yarn-orig-ctx": "YaRN: the model's original context size (`0`: its training context)",
    "yarn-ext-factor": "YaRN: extrapolation mix factor (`0`: full interpolation; default: the "
    "model's)",
    "yarn-attn-factor": "YaRN: attention magnitude scale (default: the model's)",
    "yarn-beta-slow": "YaRN: high correction dimension or alpha (default: the model's)",
    "yarn-beta-fast": "YaRN: low correction dimension or beta (default: the model's)",
    "check-tensors": "check the model's tensor data for invalid values while loading (slower)",
    "override-kv": "GGUF metadata to replace as the model loads: `KEY=TYPE:VALUE` with TYPE "
    "`int`, `float`, `bool` or `str`, comma-separated or repeated "
    "(`tokenizer.ggml.add_bos_token=bool:false`)",
    "reasoning-effort": "the chat template's `reasoning_effort` (`minimal`, `low`, `medium`, "
    "`high`, …; `default`: the template's own); `chat-template-kwargs` that set it win",
    "cache-prompt": "requests that give no `cache_prompt` reuse what their slot's cache holds "
    "of their prompt (default on)",
    "threads-batch": "threads that read prompts (batches); `0` or less: every logical CPU "
    "(default: as `threads`)",
    "prefill-assistant": "continue a chat's last assistant message when the request does not "
    "say (`continue_final_message`); off: it is a whole turn and the model answers after it "
    "(default on)",
    "reasoning-preserve": "the chat template's `preserve_reasoning`: earlier assistant turns "
    "keep their reasoning (templates that support it); off: `no-reasoning-preserve` "
    "(default on, as llama-server)",
}
