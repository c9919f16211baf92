"""How the weights load and run: mapping, locking, flash attention, NUMA, CPU placement, the KV
cache's types.
"""

from __future__ import annotations

from corral.options.values import OptionSpec

__all__ = ["ROWS"]

_CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")

ROWS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "mmap",
        "bool",
        spellings=("LLAMA_ARG_MMAP",),
        negatives=("no-mmap", "LLAMA_ARG_NO_MMAP"),
        default="true",
        dest="use_mmap",
        help="map the weights from the file (`no-mmap` = read them into memory)",
    ),
    OptionSpec(
        "mlock",
        "bool",
        spellings=("LLAMA_ARG_MLOCK",),
        default="false",
        dest="use_mlock",
        help="lock the weights in RAM (needs a memlock limit, e.g. `LimitMEMLOCK=infinity`)",
    ),
    OptionSpec(
        "mmproj-offload",
        "bool",
        spellings=("LLAMA_ARG_MMPROJ_OFFLOAD",),
        negatives=("no-mmproj-offload",),
        default="true",
        dest="mmproj_offload",
        help="run the projector on the GPU when there is one (default on)",
    ),
    OptionSpec(
        "flash-attn",
        "switch",
        spellings=("fa", "LLAMA_ARG_FLASH_ATTN"),
        default="auto",
        dest="flash_attn",
        help="flash attention",
    ),
    # llama-server's --numa (common/arg.cpp); unset: no NUMA strategy.
    OptionSpec(
        "numa",
        "choice",
        spellings=("LLAMA_ARG_NUMA",),
        literals=("distribute", "isolate", "numactl"),
        dest="numa",
        help="NUMA optimizations, as llama-server's --numa: distribute (spread over all nodes), "
        "isolate (the node the worker started on) or numactl (the CPU map numactl gives); "
        "drop the page cache first if the model ran without it",
    ),
    # llama-server's CPU affinity and priority (worker/host/cpu_placement.py): -C and -Cr add
    # up to one CPU set, --prio -1..3 is low..realtime; unset: as the worker was started.
    OptionSpec(
        "cpu-mask",
        "str",
        spellings=("C",),
        help="CPU affinity as llama-server's -C: a hex mask (`0x` optional), bit n for CPU n; "
        "with `cpu-range` it adds up to one set that every thread of the worker is pinned "
        "to before the model loads",
    ),
    OptionSpec(
        "cpu-range",
        "str",
        spellings=("Cr",),
        help="CPU affinity as llama-server's -Cr: `lo-hi`, either end optional (`4-`: from CPU "
        "4 to the last); adds to `cpu-mask`",
    ),
    OptionSpec(
        "prio",
        "choice",
        literals=("-1", "0", "1", "2", "3"),
        default="0",
        help="priority of the worker's threads, as llama-server's --prio: -1 low (nice 5), 0 "
        "normal (unchanged), 1 medium (-5), 2 high (-10), 3 realtime (-20); raising it "
        "needs the privilege to, else a warning is logged and it stays",
    ),
    OptionSpec(
        "cache-type-k",
        "choice",
        spellings=("ctk", "LLAMA_ARG_CACHE_TYPE_K"),
        literals=_CACHE_TYPES,
        default="f16",
        help="KV cache type of K",
    ),
    OptionSpec(
        "cache-type-v",
        "choice",
        spellings=("ctv", "LLAMA_ARG_CACHE_TYPE_V"),
        literals=_CACHE_TYPES,
        default="f16",
        help="KV cache type of V",
    ),
    OptionSpec(
        "rope-freq-base",
        "float",
        spellings=("LLAMA_ARG_ROPE_FREQ_BASE",),
        bound="positive",
        dest="rope_freq_base",
        help="RoPE base frequency",
    ),
)
