"""Every preset key llama-server accepts (made by scripts/gen_llama_server_keys.py).

Flags without dashes, negative flags and environment names of the options llama-server
parses, from the common/arg.cpp of the llama.cpp llama-cpp-python vendors. A preset key
in here that Corral's option table does not know is accepted with a notice that it has
no effect (docs/serving.md), never a startup error. The keys of the options arg.cpp
marks as sampling ones are listed apart too: upstream's remote-preset whitelist starts
from them (router/catalogue/remote_presets.py).
"""

__all__ = ["LLAMA_SERVER_KEYS", "LLAMA_SERVER_SAMPLING_KEYS"]

_KEYS = """
C Cb Cbd Cd Cr Crb Crd HF_TOKEN LLAMA_API_KEY LLAMA_ARG_AGENT LLAMA_ARG_ALIAS LLAMA_ARG_API_KEY_FILE
LLAMA_ARG_API_PREFIX LLAMA_ARG_BACKEND_SAMPLING LLAMA_ARG_BATCH LLAMA_ARG_CACHE_IDLE_SLOTS
LLAMA_ARG_CACHE_PROMPT LLAMA_ARG_CACHE_RAM LLAMA_ARG_CACHE_REUSE LLAMA_ARG_CACHE_TYPE_K
LLAMA_ARG_CACHE_TYPE_V LLAMA_ARG_CHAT_TEMPLATE LLAMA_ARG_CHAT_TEMPLATE_FILE
LLAMA_ARG_CHAT_TEMPLATE_KWARGS LLAMA_ARG_CHECKPOINT_MIN_SPACING_NT LLAMA_ARG_CONTEXT_SHIFT
LLAMA_ARG_CONT_BATCHING LLAMA_ARG_CORS_CREDENTIALS LLAMA_ARG_CORS_HEADERS LLAMA_ARG_CORS_METHODS
LLAMA_ARG_CORS_ORIGINS LLAMA_ARG_CPU_MOE LLAMA_ARG_CTX_CHECKPOINTS LLAMA_ARG_CTX_SIZE
LLAMA_ARG_DEFRAG_THOLD LLAMA_ARG_DEVICE LLAMA_ARG_DOCKER_REPO LLAMA_ARG_DRAFT_MAX
LLAMA_ARG_DRAFT_MIN LLAMA_ARG_EMBEDDINGS LLAMA_ARG_ENDPOINT_METRICS LLAMA_ARG_ENDPOINT_PROPS
LLAMA_ARG_ENDPOINT_SLOTS LLAMA_ARG_FIT LLAMA_ARG_FIT_CTX LLAMA_ARG_FIT_TARGET LLAMA_ARG_FLASH_ATTN
LLAMA_ARG_FREQUENCY_PENALTY LLAMA_ARG_HF_FILE LLAMA_ARG_HF_REPO LLAMA_ARG_HOST
LLAMA_ARG_IMAGE_MAX_TOKENS LLAMA_ARG_IMAGE_MIN_TOKENS LLAMA_ARG_JINJA LLAMA_ARG_KV_OFFLOAD
LLAMA_ARG_KV_UNIFIED LLAMA_ARG_KV_UNIFIED_PER_SLOT LLAMA_ARG_LAZY_MODE LLAMA_ARG_LOAD_MODE
LLAMA_ARG_LOG_COLORS LLAMA_ARG_LOG_FILE LLAMA_ARG_LOG_JSONL LLAMA_ARG_LOG_PREFIX
LLAMA_ARG_LOG_TIMESTAMPS LLAMA_ARG_LOG_VERBOSITY LLAMA_ARG_MAIN_GPU LLAMA_ARG_MCP_SERVERS_CONFIG
LLAMA_ARG_MCP_SERVERS_JSON LLAMA_ARG_MIN_P LLAMA_ARG_MMPROJ LLAMA_ARG_MMPROJ_AUTO
LLAMA_ARG_MMPROJ_OFFLOAD LLAMA_ARG_MMPROJ_URL LLAMA_ARG_MODEL LLAMA_ARG_MODELS_AUTOLOAD
LLAMA_ARG_MODELS_DIR LLAMA_ARG_MODELS_MAX LLAMA_ARG_MODELS_PRESET LLAMA_ARG_MODEL_URL
LLAMA_ARG_MTMD_BATCH_MAX_TOKENS LLAMA_ARG_NO_AGENT LLAMA_ARG_NO_CACHE_IDLE_SLOTS
LLAMA_ARG_NO_CACHE_PROMPT LLAMA_ARG_NO_CONTEXT_SHIFT LLAMA_ARG_NO_CONT_BATCHING
LLAMA_ARG_NO_CORS_CREDENTIALS LLAMA_ARG_NO_ENDPOINT_SLOTS LLAMA_ARG_NO_HOST LLAMA_ARG_NO_JINJA
LLAMA_ARG_NO_KV_OFFLOAD LLAMA_ARG_NO_KV_UNIFIED LLAMA_ARG_NO_LOG_JSONL LLAMA_ARG_NO_LOG_PREFIX
LLAMA_ARG_NO_LOG_TIMESTAMPS LLAMA_ARG_NO_MMPROJ_AUTO LLAMA_ARG_NO_MMPROJ_OFFLOAD
LLAMA_ARG_NO_MODELS_AUTOLOAD LLAMA_ARG_NO_PERF LLAMA_ARG_NO_PREFILL_ASSISTANT
LLAMA_ARG_NO_REASONING_PRESERVE LLAMA_ARG_NO_REPACK LLAMA_ARG_NO_SKIP_CHAT_PARSING
LLAMA_ARG_NO_SPEC_DRAFT_BACKEND_SAMPLING LLAMA_ARG_NO_UI LLAMA_ARG_NO_UI_MCP_PROXY LLAMA_ARG_NUMA
LLAMA_ARG_N_CPU_FFN LLAMA_ARG_N_CPU_MOE LLAMA_ARG_N_GPU_LAYERS LLAMA_ARG_N_GPU_LAYERS_DRAFT
LLAMA_ARG_N_PARALLEL LLAMA_ARG_N_PREDICT LLAMA_ARG_OFFLINE LLAMA_ARG_OVERRIDE_TENSOR LLAMA_ARG_PERF
LLAMA_ARG_POOLING LLAMA_ARG_PORT LLAMA_ARG_PREFILL_ASSISTANT LLAMA_ARG_PRESENCE_PENALTY
LLAMA_ARG_REASONING LLAMA_ARG_REASONING_EFFORT LLAMA_ARG_REASONING_PRESERVE LLAMA_ARG_REPACK
LLAMA_ARG_REPEAT_PENALTY LLAMA_ARG_RERANKING LLAMA_ARG_REUSE_PORT LLAMA_ARG_ROPE_FREQ_BASE
LLAMA_ARG_ROPE_FREQ_SCALE LLAMA_ARG_ROPE_SCALE LLAMA_ARG_ROPE_SCALING_TYPE LLAMA_ARG_RPC
LLAMA_ARG_SKIP_CHAT_PARSING LLAMA_ARG_SPEC_DRAFT_BACKEND_SAMPLING LLAMA_ARG_SPEC_DRAFT_CACHE_TYPE_K
LLAMA_ARG_SPEC_DRAFT_CACHE_TYPE_V LLAMA_ARG_SPEC_DRAFT_CPU_MOE LLAMA_ARG_SPEC_DRAFT_HF_REPO
LLAMA_ARG_SPEC_DRAFT_MODEL LLAMA_ARG_SPEC_DRAFT_N_CPU_MOE LLAMA_ARG_SPEC_DRAFT_N_MAX
LLAMA_ARG_SPEC_DRAFT_N_MIN LLAMA_ARG_SPEC_DRAFT_P_MIN LLAMA_ARG_SPEC_DRAFT_P_SPLIT
LLAMA_ARG_SPEC_SYNTH_LEN LLAMA_ARG_SPEC_SYNTH_RATES LLAMA_ARG_SPEC_TYPE LLAMA_ARG_SPLIT_MODE
LLAMA_ARG_SSE_PING_INTERVAL LLAMA_ARG_SSL_CERT_FILE LLAMA_ARG_SSL_KEY_FILE LLAMA_ARG_STATIC_PATH
LLAMA_ARG_SWA_FULL LLAMA_ARG_TAGS LLAMA_ARG_TEMPERATURE LLAMA_ARG_TENSOR_SPLIT LLAMA_ARG_THINK
LLAMA_ARG_THINK_BUDGET LLAMA_ARG_THINK_BUDGET_MESSAGE LLAMA_ARG_THREADS LLAMA_ARG_THREADS_HTTP
LLAMA_ARG_TIMEOUT LLAMA_ARG_TOOLS LLAMA_ARG_TOOLS_RUNTIME LLAMA_ARG_TOP_K LLAMA_ARG_TOP_P
LLAMA_ARG_UBATCH LLAMA_ARG_UI LLAMA_ARG_UI_CONFIG LLAMA_ARG_UI_CONFIG_FILE LLAMA_ARG_UI_MCP_PROXY
LLAMA_ARG_VIDEO_FFMPEG_DIR LLAMA_ARG_VIDEO_FPS LLAMA_ARG_VIDEO_TIMESTAMP_INTERVAL
LLAMA_ARG_YARN_ATTN_FACTOR LLAMA_ARG_YARN_BETA_FAST LLAMA_ARG_YARN_BETA_SLOW
LLAMA_ARG_YARN_EXT_FACTOR LLAMA_ARG_YARN_ORIG_CTX MTMD_BACKEND_DEVICE a adaptive-decay
adaptive-target ag agent alias api-key api-key-file api-prefix b backend-sampling batch-size bs c
cache-idle-slots cache-list cache-prompt cache-ram cache-reuse cache-type-k cache-type-k-draft
cache-type-v cache-type-v-draft cb chat-template chat-template-file chat-template-kwargs
check-tensors checkpoint-min-step cl cmoe cmoed cms completion-bash cont-batching context-shift
control-vector control-vector-layer-range control-vector-scaled cors-credentials cors-headers
cors-methods cors-origins cpu-mask cpu-mask-batch cpu-mask-batch-draft cpu-mask-draft cpu-moe
cpu-moe-draft cpu-range cpu-range-batch cpu-range-draft cpu-strict cpu-strict-batch
cpu-strict-batch-draft cpu-strict-draft cram ctk ctkd ctv ctvd ctx-checkpoints ctx-size ctxcp
defrag-thold dev devd device device-draft docker-repo dr draft draft-max draft-min draft-n
draft-n-min draft-p-min draft-p-split dry-allowed-length dry-base dry-multiplier dry-penalty-last-n
dry-sequence-breaker dt dynatemp-exp dynatemp-range e embd-gemma-default embd-normalize embedding
embeddings escape fa fim-qwen-1.5b-default fim-qwen-14b-spec fim-qwen-30b-default
fim-qwen-3b-default fim-qwen-7b-default fim-qwen-7b-spec fit fit-ctx fit-target fitc fitt flash-attn
frequency-penalty gpt-oss-120b-default gpt-oss-20b-default gpu-layers gpu-layers-draft grammar
grammar-file h help hf hf-file hf-repo hf-repo-draft hf-token hfd hff hfr hfrd hft host ignore-eos
image-max-tokens image-min-tokens j jf jinja json-schema json-schema-file keep kv-offload kv-unified
kv-unified-per-slot kvo kvu l lazy-mode lcd lcs list-devices lm load-mode log-colors log-disable
log-file log-jsonl log-prefix log-prompts-dir log-timestamps log-verbose log-verbosity logit-bias
lookup-cache-dynamic lookup-cache-static lora lora-init-without-apply lora-scaled lv lzm m main-gpu
mcp-servers-config mcp-servers-json md media-path metrics mg min-p mirostat mirostat-ent mirostat-lr
mm mmdev mmproj mmproj-auto mmproj-device mmproj-offload mmproj-url mmu model model-draft model-url
models-autoload models-dir models-max models-preset mtmd-batch-max-tokens mu n n-cpu-ffn n-cpu-moe
n-cpu-moe-draft n-gpu-layers n-gpu-layers-draft n-predict ncffn ncmoe ncmoed ngl ngld nkvo no-ag
no-agent no-cache-idle-slots no-cache-prompt no-cont-batching no-context-shift no-cors-credentials
no-escape no-host no-jinja no-kv-offload no-kv-unified no-kvu no-log-jsonl no-log-prefix
no-log-timestamps no-mmproj no-mmproj-auto no-mmproj-offload no-models-autoload no-op-offload
no-perf no-prefill-assistant no-reasoning-preserve no-repack no-skip-chat-parsing no-slots
no-spec-draft-backend-sampling no-ui no-ui-mcp-proxy no-warmup no-webui no-webui-mcp-proxy nocb np
nr numa offline op-offload ot otd override-kv override-tensor override-tensor-draft parallel path
perf poll poll-batch poll-batch-draft poll-draft pooling port predict prefill-assistant
presence-penalty prio prio-batch prio-batch-draft prio-draft props r rea reasoning reasoning-budget
reasoning-budget-message reasoning-effort reasoning-format reasoning-preserve repack repeat-last-n
repeat-penalty rerank reranking reuse-port reverse-prompt rope-freq-base rope-freq-scale rope-scale
rope-scaling rpc s sampler-seq samplers sampling-seq seed skip-chat-parsing sleep-idle-seconds
slot-prompt-similarity slot-save-path slots sm sp spec-default spec-draft-backend-sampling
spec-draft-cpu-mask spec-draft-cpu-mask-batch spec-draft-cpu-moe spec-draft-cpu-range
spec-draft-cpu-strict spec-draft-cpu-strict-batch spec-draft-device spec-draft-hf spec-draft-model
spec-draft-n-cpu-moe spec-draft-n-max spec-draft-n-min spec-draft-ncmoe spec-draft-ngl
spec-draft-override-tensor spec-draft-p-min spec-draft-p-split spec-draft-poll spec-draft-poll-batch
spec-draft-prio spec-draft-prio-batch spec-draft-threads spec-draft-threads-batch spec-draft-type-k
spec-draft-type-v spec-ngram-map-k-min-hits spec-ngram-map-k-size-m spec-ngram-map-k-size-n
spec-ngram-map-k4v-min-hits spec-ngram-map-k4v-size-m spec-ngram-map-k4v-size-n spec-ngram-min-hits
spec-ngram-mod-n-match spec-ngram-mod-n-max spec-ngram-mod-n-min spec-ngram-simple-min-hits
spec-ngram-simple-size-m spec-ngram-simple-size-n spec-ngram-size-m spec-ngram-size-n spec-synth-len
spec-synth-rates spec-type special split-mode spm-infill sps sse-ping-interval ssl-cert-file
ssl-key-file swa-checkpoints swa-full t tags tb tbd td temp temperature tensor-split threads
threads-batch threads-batch-draft threads-draft threads-http timeout to tools tools-runtime top-k
top-n-sigma top-nsigma top-p ts typical typical-p ub ubatch-size ui ui-config ui-config-file
ui-mcp-proxy usage v verbose verbosity version video-ffmpeg-dir video-fps video-timestamp-interval
vision-gemma-12b-default vision-gemma-4b-default warmup webui webui-config webui-config-file
webui-mcp-proxy xtc-probability xtc-threshold yarn-attn-factor yarn-beta-fast yarn-beta-slow
yarn-ext-factor yarn-orig-ctx
"""

_SAMPLING_KEYS = """
LLAMA_ARG_BACKEND_SAMPLING LLAMA_ARG_FREQUENCY_PENALTY LLAMA_ARG_MIN_P LLAMA_ARG_PRESENCE_PENALTY
LLAMA_ARG_REPEAT_PENALTY LLAMA_ARG_TEMPERATURE LLAMA_ARG_TOP_K LLAMA_ARG_TOP_P adaptive-decay
adaptive-target backend-sampling bs dry-allowed-length dry-base dry-multiplier dry-penalty-last-n
dry-sequence-breaker dynatemp-exp dynatemp-range frequency-penalty grammar grammar-file ignore-eos j
jf json-schema json-schema-file l logit-bias min-p mirostat mirostat-ent mirostat-lr
presence-penalty repeat-last-n repeat-penalty s sampler-seq samplers sampling-seq seed temp
temperature top-k top-n-sigma top-nsigma top-p typical typical-p xtc-probability xtc-threshold
"""

LLAMA_SERVER_KEYS = frozenset(_KEYS.split())
LLAMA_SERVER_SAMPLING_KEYS = frozenset(_SAMPLING_KEYS.split())
