"""The context, its slots and their KV cache, threads, batches and offloaded layers."""

from __future__ import annotations

from corral.options.values import OptionSpec

__all__ = ["ROWS"]

ROWS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "ctx-size",
        "int",
        spellings=("c", "LLAMA_ARG_CTX_SIZE"),
        bound="non_negative",
        default="0",
        help="context size in tokens (llama.cpp rounds it up to a multiple of 256); shared "
        "evenly by the slots unless their KV cache is unified. Default `0`, as "
        "llama-server (common/common.h `n_ctx = 0`): the model's training context for each "
        "slot",
    ),
    OptionSpec(
        "threads",
        "int",
        spellings=("t", "LLAMA_ARG_THREADS"),
        help="CPU threads. Default as llama-server (common/common.cpp "
        "`common_cpu_get_num_math`): the physical cores (the performance cores of an Intel "
        "hybrid CPU); `0` or less: every logical CPU. Unset, the router shares the cores among "
        "the models generating at once; set, the model keeps its count (docs/serving.md, CPU "
        "threads)",
    ),
    OptionSpec(
        "batch-size",
        "int",
        spellings=("b", "LLAMA_ARG_BATCH"),
        bound="positive",
        default="2048",
        dest="batch_size",
        help="logical batch size: prompt tokens per decode. Default 2048, as llama-server "
        "(common/common.h `n_batch`)",
    ),
    OptionSpec(
        "ubatch-size",
        "int",
        spellings=("ub", "LLAMA_ARG_UBATCH"),
        bound="positive",
        default="512",
        dest="ubatch_size",
        help="physical batch size (at most the logical one). Default 512, as llama-server "
        "(common/common.h `n_ubatch`)",
    ),
    OptionSpec(
        "n-gpu-layers",
        "int",
        spellings=("ngl", "gpu-layers", "LLAMA_ARG_N_GPU_LAYERS"),
        literals=("auto", "all"),
        default="auto",
        help="most layers kept in GPU memory: a number, `all`, or `auto` (the default, as "
        "llama-server: every layer, fewer when `fit` finds they do not fit); a CPU build "
        "keeps every layer on the CPU whatever it says",
    ),
    # ggml RPC servers (HOST:PORT) whose devices take offloaded layers; the worker checks them.
    OptionSpec(
        "rpc",
        "list",
        spellings=("LLAMA_ARG_RPC",),
        help="ggml RPC servers (`HOST:PORT`, comma-separated or the flag repeated) that take "
        "the offloaded layers (`corral rpc-server` on the other machines; "
        "docs/scaling.md); with it, `n-gpu-layers` defaults to `all`. Trusted networks "
        "only: the protocol has no authentication",
    ),
    OptionSpec(
        "n-predict",
        "int",
        spellings=("n", "predict", "LLAMA_ARG_N_PREDICT"),
        default="-1",
        dest="n_predict",
        help="default token budget of a request; `-1` = up to the context",
    ),
    OptionSpec(
        "parallel",
        "int",
        spellings=("np", "LLAMA_ARG_N_PARALLEL"),
        default="-1",
        help="slots served together by continuous batching. Default `-1` (automatic), as "
        "llama-server (tools/server/server.cpp): 4 slots sharing one unified KV cache",
    ),
    OptionSpec(
        "kv-unified",
        "bool",
        spellings=("kvu", "LLAMA_ARG_KV_UNIFIED"),
        negatives=("no-kv-unified", "no-kvu", "LLAMA_ARG_NO_KV_UNIFIED"),
        default="false",
        help="one KV cache shared by all slots, each of which may use the whole context "
        "(`-kvu`); default off, but always on with automatic slots, as llama-server",
    ),
    OptionSpec(
        "spm-infill",
        "bool",
        default="false",
        dest="spm_infill",
        help="/infill lays the prompt out suffix first (Suffix/Prefix/Middle), as some models "
        "were trained, instead of Prefix/Suffix/Middle",
    ),
    OptionSpec(
        "cache-reuse",
        "int",
        spellings=("LLAMA_ARG_CACHE_REUSE",),
        bound="non_negative",
        default="0",
        dest="cache_reuse",
        help="the shortest run of tokens a prompt reuses from further on in its slot's cache by "
        "shifting it into place (0: none), as llama-server's --cache-reuse; a request's "
        "n_cache_reuse overrides it",
    ),
    OptionSpec(
        "kv-unified-per-slot",
        "int",
        spellings=("LLAMA_ARG_KV_UNIFIED_PER_SLOT",),
        bound="non_negative",
        default="0",
        help="the most tokens one slot may hold (0: no cap); without --ctx-size the context is "
        "sized to the slots times it, as llama-server",
    ),
    # Sliding-window models (gemma-3, gpt-oss): the window layers' cache keeps only the window
    # unless --swa-full; checkpoints of it let a prompt that differs before the window resume
    # (worker/cache/checkpoints.py).
    OptionSpec(
        "swa-full",
        "bool",
        spellings=("LLAMA_ARG_SWA_FULL",),
        default="false",
        dest="swa_full",
        help="a sliding-window model (gemma-3, gpt-oss) keeps its whole context in the window "
        "layers' cache too, as llama-server's --swa-full: more memory, and any earlier "
        "prompt can be resumed; without it the cache holds the window, and checkpoints "
        "cover resumes",
    ),
    OptionSpec(
        "ctx-checkpoints",
        "int",
        spellings=("ctxcp", "swa-checkpoints", "LLAMA_ARG_CTX_CHECKPOINTS"),
        default="32",
        dest="ctx_checkpoints",
        help="the most context checkpoints a slot keeps (0: none): copies of the part of its "
        "state that cannot be cut back (a sliding window, a recurrent state), taken near "
        "the end of each prompt, so a next prompt that differs earlier resumes from one",
    ),
    OptionSpec(
        "checkpoint-min-step",
        "int",
        spellings=("cms", "LLAMA_ARG_CHECKPOINT_MIN_SPACING_NT"),
        bound="non_negative",
        default="8192",
        dest="checkpoint_min_step",
        help="the fewest tokens between two checkpoints of a slot, once it holds as many as "
        "--ctx-checkpoints allows (0: no minimum)",
    ),
)
