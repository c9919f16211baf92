"""Every flag of llama-server's ``--help`` (the table by scripts/gen_llama_server_flags.py).

From the common/arg.cpp of the llama.cpp llama-cpp-python vendors, one line an option:
how many values it takes, its variable (``-``: none), ``sampling`` for a sampling option, then
its spellings and, after a ``/``, its negative ones. ``python -m worker`` accepts each one it
does not implement with a notice (:mod:`corral.options.flags`), ``corral serve`` too
(:mod:`router.cli.no_effect`); the census test gives every one to both parsers.
"""

# ruff: noqa: E501 (one line an option, however long)

from __future__ import annotations

from typing import NamedTuple

__all__ = ["LLAMA_CPP_COMMIT", "LLAMA_CPP_PYTHON_VERSION", "LLAMA_SERVER_FLAGS", "LlamaServerFlag"]

# The sdist read, and the llama.cpp commit it vendors (tests/corral/options/ checks both
# against the installed llama-cpp-python).
LLAMA_CPP_PYTHON_VERSION = "0.3.36"
LLAMA_CPP_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"


class LlamaServerFlag(NamedTuple):
    arity: int  # how many values follow the flag
    env: str | None  # its LLAMA_ARG_* (or other) variable
    spellings: tuple[str, ...]  # with their dashes; negative spellings too, last
    negatives: tuple[str, ...]  # the negative spellings among them
    sampling: bool  # arg.cpp marks it a sampling option


def _flag(arity: str, env: str, kind: str, *spellings: str) -> LlamaServerFlag:
    slash = spellings.index("/") if "/" in spellings else len(spellings)
    return LlamaServerFlag(
        int(arity),
        None if env == "-" else env,
        spellings[:slash] + spellings[slash + 1 :],
        spellings[slash + 1 :],
        kind == "sampling",
    )


_FLAGS = """
0 - - -h --help --usage
0 - - --version
0 - - -cl --cache-list
0 - - --completion-bash
1 LLAMA_ARG_THREADS - -t --threads
1 - - -tb --threads-batch
1 - - -C --cpu-mask
1 - - -Cr --cpu-range
1 - - --cpu-strict
1 - - --prio
1 - - --poll
1 - - -Cb --cpu-mask-batch
1 - - -Crb --cpu-range-batch
1 - - --cpu-strict-batch
1 - - --prio-batch
1 - - --poll-batch
1 - - -lcs --lookup-cache-static
1 - - -lcd --lookup-cache-dynamic
1 LLAMA_ARG_CTX_SIZE - -c --ctx-size
1 LLAMA_ARG_KV_UNIFIED_PER_SLOT - --kv-unified-per-slot
1 LLAMA_ARG_N_PREDICT - -n --predict --n-predict
1 LLAMA_ARG_BATCH - -b --batch-size
1 LLAMA_ARG_UBATCH - -ub --ubatch-size
1 - - --keep
0 LLAMA_ARG_SWA_FULL - --swa-full
1 LLAMA_ARG_CTX_CHECKPOINTS - -ctxcp --ctx-checkpoints --swa-checkpoints
1 LLAMA_ARG_CHECKPOINT_MIN_SPACING_NT - -cms --checkpoint-min-step
1 LLAMA_ARG_CACHE_RAM - -cram --cache-ram
0 LLAMA_ARG_KV_UNIFIED - -kvu --kv-unified / -no-kvu --no-kv-unified
0 LLAMA_ARG_CACHE_IDLE_SLOTS - --cache-idle-slots / --no-cache-idle-slots
0 LLAMA_ARG_CONTEXT_SHIFT - --context-shift / --no-context-shift
1 LLAMA_ARG_FLASH_ATTN - -fa --flash-attn
0 LLAMA_ARG_PERF - --perf / --no-perf
0 - - -e --escape / --no-escape
1 - - -r --reverse-prompt
0 - - -sp --special
0 - - --warmup / --no-warmup
0 - - --spm-infill
1 - sampling --samplers
1 - sampling -s --seed
1 - sampling --sampler-seq --sampling-seq
0 - sampling --ignore-eos
1 LLAMA_ARG_TEMPERATURE sampling --temp --temperature
1 LLAMA_ARG_TOP_K sampling --top-k
1 LLAMA_ARG_TOP_P sampling --top-p
1 LLAMA_ARG_MIN_P sampling --min-p
1 - sampling --top-nsigma --top-n-sigma
1 - sampling --xtc-probability
1 - sampling --xtc-threshold
1 - sampling --typical --typical-p
1 - sampling --repeat-last-n
1 LLAMA_ARG_REPEAT_PENALTY sampling --repeat-penalty
1 LLAMA_ARG_PRESENCE_PENALTY sampling --presence-penalty
1 LLAMA_ARG_FREQUENCY_PENALTY sampling --frequency-penalty
1 - sampling --dry-multiplier
1 - sampling --dry-base
1 - sampling --dry-allowed-length
1 - sampling --dry-penalty-last-n
1 - sampling --dry-sequence-breaker
1 - sampling --adaptive-target
1 - sampling --adaptive-decay
1 - sampling --dynatemp-range
1 - sampling --dynatemp-exp
1 - sampling --mirostat
1 - sampling --mirostat-lr
1 - sampling --mirostat-ent
1 - sampling -l --logit-bias
1 - sampling --grammar
1 - sampling --grammar-file
1 - sampling -j --json-schema
1 - sampling -jf --json-schema-file
0 LLAMA_ARG_BACKEND_SAMPLING sampling -bs --backend-sampling
1 LLAMA_ARG_POOLING - --pooling
1 LLAMA_ARG_ROPE_SCALING_TYPE - --rope-scaling
1 LLAMA_ARG_ROPE_SCALE - --rope-scale
1 LLAMA_ARG_ROPE_FREQ_BASE - --rope-freq-base
1 LLAMA_ARG_ROPE_FREQ_SCALE - --rope-freq-scale
1 LLAMA_ARG_YARN_ORIG_CTX - --yarn-orig-ctx
1 LLAMA_ARG_YARN_EXT_FACTOR - --yarn-ext-factor
1 LLAMA_ARG_YARN_ATTN_FACTOR - --yarn-attn-factor
1 LLAMA_ARG_YARN_BETA_SLOW - --yarn-beta-slow
1 LLAMA_ARG_YARN_BETA_FAST - --yarn-beta-fast
0 LLAMA_ARG_KV_OFFLOAD - -kvo --kv-offload / -nkvo --no-kv-offload
0 LLAMA_ARG_REPACK - --repack / -nr --no-repack
0 LLAMA_ARG_NO_HOST - --no-host
1 LLAMA_ARG_CACHE_TYPE_K - -ctk --cache-type-k
1 LLAMA_ARG_CACHE_TYPE_V - -ctv --cache-type-v
1 LLAMA_ARG_DEFRAG_THOLD - -dt --defrag-thold
1 LLAMA_ARG_N_PARALLEL - -np --parallel
0 LLAMA_ARG_CONT_BATCHING - -cb --cont-batching / -nocb --no-cont-batching
1 LLAMA_ARG_MMPROJ - -mm --mmproj
1 LLAMA_ARG_MMPROJ_URL - -mmu --mmproj-url
0 LLAMA_ARG_MMPROJ_AUTO - --mmproj-auto / --no-mmproj --no-mmproj-auto
0 LLAMA_ARG_MMPROJ_OFFLOAD - --mmproj-offload / --no-mmproj-offload
1 MTMD_BACKEND_DEVICE - -mmdev --mmproj-device
1 LLAMA_ARG_IMAGE_MIN_TOKENS - --image-min-tokens
1 LLAMA_ARG_IMAGE_MAX_TOKENS - --image-max-tokens
1 LLAMA_ARG_MTMD_BATCH_MAX_TOKENS - --mtmd-batch-max-tokens
1 LLAMA_ARG_VIDEO_FPS - --video-fps
1 LLAMA_ARG_VIDEO_TIMESTAMP_INTERVAL - --video-timestamp-interval
1 LLAMA_ARG_VIDEO_FFMPEG_DIR - --video-ffmpeg-dir
1 LLAMA_ARG_RPC - --rpc
1 LLAMA_ARG_LOAD_MODE - -lm --load-mode
1 LLAMA_ARG_LAZY_MODE - -lzm --lazy-mode
1 LLAMA_ARG_NUMA - --numa
1 LLAMA_ARG_DEVICE - -dev --device
0 - - --list-devices
1 LLAMA_ARG_OVERRIDE_TENSOR - -ot --override-tensor
0 LLAMA_ARG_CPU_MOE - -cmoe --cpu-moe
1 LLAMA_ARG_N_CPU_MOE - -ncmoe --n-cpu-moe
1 LLAMA_ARG_N_CPU_FFN - -ncffn --n-cpu-ffn
1 LLAMA_ARG_N_GPU_LAYERS - -ngl --gpu-layers --n-gpu-layers
1 LLAMA_ARG_SPLIT_MODE - -sm --split-mode
1 LLAMA_ARG_TENSOR_SPLIT - -ts --tensor-split
1 LLAMA_ARG_MAIN_GPU - -mg --main-gpu
1 LLAMA_ARG_FIT - -fit --fit
1 LLAMA_ARG_FIT_TARGET - -fitt --fit-target
1 LLAMA_ARG_FIT_CTX - -fitc --fit-ctx
0 - - --check-tensors
1 - - --override-kv
0 - - --op-offload / --no-op-offload
1 - - --lora
1 - - --lora-scaled
1 - - --control-vector
1 - - --control-vector-scaled
2 - - --control-vector-layer-range
1 LLAMA_ARG_ALIAS - -a --alias
1 LLAMA_ARG_TAGS - --tags
1 LLAMA_ARG_MODEL - -m --model
1 LLAMA_ARG_MODEL_URL - -mu --model-url
1 LLAMA_ARG_DOCKER_REPO - -dr --docker-repo
1 LLAMA_ARG_HF_REPO - -hf -hfr --hf-repo
1 LLAMA_ARG_HF_FILE - -hff --hf-file
1 HF_TOKEN - -hft --hf-token
1 - - --embd-normalize
1 LLAMA_ARG_HOST - --host
1 LLAMA_ARG_PORT - --port
0 LLAMA_ARG_REUSE_PORT - --reuse-port
1 LLAMA_ARG_STATIC_PATH - --path
1 LLAMA_ARG_CORS_ORIGINS - --cors-origins
1 LLAMA_ARG_CORS_METHODS - --cors-methods
1 LLAMA_ARG_CORS_HEADERS - --cors-headers
0 LLAMA_ARG_CORS_CREDENTIALS - --cors-credentials / --no-cors-credentials
1 LLAMA_ARG_API_PREFIX - --api-prefix
1 LLAMA_ARG_UI_CONFIG - --ui-config --webui-config
1 LLAMA_ARG_UI_CONFIG_FILE - --ui-config-file --webui-config-file
0 LLAMA_ARG_UI_MCP_PROXY - --ui-mcp-proxy --webui-mcp-proxy / --no-ui-mcp-proxy --no-webui-mcp-proxy
1 LLAMA_ARG_TOOLS - --tools
1 LLAMA_ARG_TOOLS_RUNTIME - --tools-runtime
1 LLAMA_ARG_MCP_SERVERS_CONFIG - --mcp-servers-config
1 LLAMA_ARG_MCP_SERVERS_JSON - --mcp-servers-json
0 LLAMA_ARG_AGENT - -ag --agent / -no-ag --no-agent
0 LLAMA_ARG_UI - --ui --webui / --no-ui --no-webui
0 LLAMA_ARG_EMBEDDINGS - --embedding --embeddings
0 LLAMA_ARG_RERANKING - --rerank --reranking
1 LLAMA_API_KEY - --api-key
1 LLAMA_ARG_API_KEY_FILE - --api-key-file
1 LLAMA_ARG_SSL_KEY_FILE - --ssl-key-file
1 LLAMA_ARG_SSL_CERT_FILE - --ssl-cert-file
1 LLAMA_ARG_CHAT_TEMPLATE_KWARGS - --chat-template-kwargs
1 LLAMA_ARG_TIMEOUT - -to --timeout
1 LLAMA_ARG_SSE_PING_INTERVAL - --sse-ping-interval
1 LLAMA_ARG_THREADS_HTTP - --threads-http
0 LLAMA_ARG_CACHE_PROMPT - --cache-prompt / --no-cache-prompt
1 LLAMA_ARG_CACHE_REUSE - --cache-reuse
0 LLAMA_ARG_ENDPOINT_METRICS - --metrics
0 LLAMA_ARG_ENDPOINT_PROPS - --props
0 LLAMA_ARG_ENDPOINT_SLOTS - --slots / --no-slots
1 - - --slot-save-path
1 - - --media-path
1 LLAMA_ARG_MODELS_DIR - --models-dir
1 LLAMA_ARG_MODELS_PRESET - --models-preset
1 LLAMA_ARG_MODELS_MAX - --models-max
0 LLAMA_ARG_MODELS_AUTOLOAD - --models-autoload / --no-models-autoload
0 LLAMA_ARG_JINJA - --jinja / --no-jinja
1 LLAMA_ARG_THINK - --reasoning-format
1 LLAMA_ARG_REASONING - -rea --reasoning
1 LLAMA_ARG_REASONING_EFFORT - --reasoning-effort
1 LLAMA_ARG_THINK_BUDGET - --reasoning-budget
1 LLAMA_ARG_THINK_BUDGET_MESSAGE - --reasoning-budget-message
0 LLAMA_ARG_REASONING_PRESERVE - --reasoning-preserve / --no-reasoning-preserve
1 LLAMA_ARG_CHAT_TEMPLATE - --chat-template
1 LLAMA_ARG_CHAT_TEMPLATE_FILE - --chat-template-file
0 LLAMA_ARG_SKIP_CHAT_PARSING - --skip-chat-parsing / --no-skip-chat-parsing
0 LLAMA_ARG_PREFILL_ASSISTANT - --prefill-assistant / --no-prefill-assistant
1 - - -sps --slot-prompt-similarity
0 - - --lora-init-without-apply
1 - - --sleep-idle-seconds
0 - - --log-disable
1 LLAMA_ARG_LOG_FILE - --log-file
0 LLAMA_ARG_LOG_JSONL - --log-jsonl / --no-log-jsonl
1 - - --log-prompts-dir
1 LLAMA_ARG_LOG_COLORS - --log-colors
0 - - -v --verbose --log-verbose
0 LLAMA_ARG_OFFLINE - --offline
1 LLAMA_ARG_LOG_VERBOSITY - -lv --verbosity --log-verbosity
0 LLAMA_ARG_LOG_PREFIX - --log-prefix / --no-log-prefix
0 LLAMA_ARG_LOG_TIMESTAMPS - --log-timestamps / --no-log-timestamps
1 LLAMA_ARG_SPEC_DRAFT_HF_REPO - --spec-draft-hf -hfd -hfrd --hf-repo-draft
1 - - --spec-draft-threads -td --threads-draft
1 - - --spec-draft-threads-batch -tbd --threads-batch-draft
1 - - --spec-draft-cpu-mask -Cd --cpu-mask-draft
1 - - --spec-draft-cpu-range -Crd --cpu-range-draft
1 - - --spec-draft-cpu-strict --cpu-strict-draft
1 - - --spec-draft-prio --prio-draft
1 - - --spec-draft-poll --poll-draft
1 - - --spec-draft-cpu-mask-batch -Cbd --cpu-mask-batch-draft
1 - - --spec-draft-cpu-strict-batch --cpu-strict-batch-draft
1 - - --spec-draft-prio-batch --prio-batch-draft
1 - - --spec-draft-poll-batch --poll-batch-draft
1 LLAMA_ARG_SPEC_DRAFT_CACHE_TYPE_K - --spec-draft-type-k -ctkd --cache-type-k-draft
1 LLAMA_ARG_SPEC_DRAFT_CACHE_TYPE_V - --spec-draft-type-v -ctvd --cache-type-v-draft
1 - - --spec-draft-override-tensor -otd --override-tensor-draft
0 LLAMA_ARG_SPEC_DRAFT_CPU_MOE - --spec-draft-cpu-moe -cmoed --cpu-moe-draft
1 LLAMA_ARG_SPEC_DRAFT_N_CPU_MOE - --spec-draft-n-cpu-moe --spec-draft-ncmoe -ncmoed --n-cpu-moe-draft
1 LLAMA_ARG_SPEC_DRAFT_N_MAX - --spec-draft-n-max
1 LLAMA_ARG_SPEC_DRAFT_N_MIN - --spec-draft-n-min
1 LLAMA_ARG_SPEC_SYNTH_LEN - --spec-synth-len
1 LLAMA_ARG_SPEC_SYNTH_RATES - --spec-synth-rates
1 LLAMA_ARG_SPEC_DRAFT_P_SPLIT - --spec-draft-p-split --draft-p-split
1 LLAMA_ARG_SPEC_DRAFT_P_MIN - --spec-draft-p-min --draft-p-min
0 LLAMA_ARG_SPEC_DRAFT_BACKEND_SAMPLING - --spec-draft-backend-sampling / --no-spec-draft-backend-sampling
1 - - --spec-draft-device -devd --device-draft
1 LLAMA_ARG_N_GPU_LAYERS_DRAFT - --spec-draft-ngl -ngld --gpu-layers-draft --n-gpu-layers-draft
1 LLAMA_ARG_SPEC_DRAFT_MODEL - --spec-draft-model -md --model-draft
1 LLAMA_ARG_SPEC_TYPE - --spec-type
1 - - --spec-ngram-mod-n-min
1 - - --spec-ngram-mod-n-max
1 - - --spec-ngram-mod-n-match
1 - - --spec-ngram-simple-size-n
1 - - --spec-ngram-simple-size-m
1 - - --spec-ngram-simple-min-hits
1 - - --spec-ngram-map-k-size-n
1 - - --spec-ngram-map-k-size-m
1 - - --spec-ngram-map-k-min-hits
1 - - --spec-ngram-map-k4v-size-n
1 - - --spec-ngram-map-k4v-size-m
1 - - --spec-ngram-map-k4v-min-hits
1 LLAMA_ARG_DRAFT_MAX - --draft --draft-n --draft-max
1 LLAMA_ARG_DRAFT_MIN - --draft-min --draft-n-min
1 - - --spec-ngram-size-n
1 - - --spec-ngram-size-m
1 - - --spec-ngram-min-hits
0 - - --embd-gemma-default
0 - - --fim-qwen-1.5b-default
0 - - --fim-qwen-3b-default
0 - - --fim-qwen-7b-default
0 - - --fim-qwen-7b-spec
0 - - --fim-qwen-14b-spec
0 - - --fim-qwen-30b-default
0 - - --gpt-oss-20b-default
0 - - --gpt-oss-120b-default
0 - - --vision-gemma-4b-default
0 - - --vision-gemma-12b-default
0 - - --spec-default
"""

LLAMA_SERVER_FLAGS: tuple[LlamaServerFlag, ...] = tuple(
    _flag(*line.split()) for line in _FLAGS.strip().splitlines()
)
