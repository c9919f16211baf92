"""GPU (issue 26): llama-server's device flags, spelled as its common/arg.cpp spells them."""

from __future__ import annotations

from corral.options.values import OptionSpec

__all__ = ["ROWS"]

ROWS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "device",
        "list",
        spellings=("dev", "LLAMA_ARG_DEVICE"),
        help="devices to offload to, comma-separated ggml names (`CUDA0,CUDA1`; `none` = don't "
        "offload); `--list-devices` lists them. Default: every GPU",
    ),
    OptionSpec(
        "fit",
        "on-off",
        dest="gpu.fit",
        spellings=("LLAMA_ARG_FIT",),
        default="on",
        help="`on` (default, as llama-server): before loading, measure the model with "
        "llama.cpp's own `--fit` (common/fit.cpp) and shrink what was left unset (the "
        "context toward `fit-ctx` when `ctx-size` is unset, then the GPU layers when "
        "`n-gpu-layers` is unset) until each device keeps its `fit-target` free; `off`: "
        "load as told",
    ),
    OptionSpec(
        "fit-target",
        "numbers",
        spellings=("fitt", "LLAMA_ARG_FIT_TARGET"),
        default="1024",
        help="MiB each device keeps free when fitting, comma-separated per device (one value: "
        "every device). Default 1024, as llama-server",
    ),
    OptionSpec(
        "fit-ctx",
        "int",
        dest="gpu.fit_ctx",
        spellings=("fitc", "LLAMA_ARG_FIT_CTX"),
        bound="non_negative",
        default="4096",
        help="smallest context `fit` may shrink an unset `ctx-size` to. Default 4096, as "
        "llama-server",
    ),
    OptionSpec(
        "split-mode",
        "choice",
        dest="gpu.split_mode",
        spellings=("sm", "LLAMA_ARG_SPLIT_MODE"),
        literals=("none", "layer", "row", "tensor"),
        default="layer",
        help="how a model spans several GPUs: `none` (one GPU, `main-gpu`), `layer` (default: "
        "layers and KV split, pipelined), `row` (weights split by rows), `tensor` "
        "(experimental)",
    ),
    OptionSpec(
        "tensor-split",
        "numbers",
        spellings=("ts", "LLAMA_ARG_TENSOR_SPLIT"),
        help="share of the model each GPU takes, comma-separated proportions (`3,1`)",
    ),
    OptionSpec(
        "main-gpu",
        "int",
        dest="gpu.main_gpu",
        spellings=("mg", "LLAMA_ARG_MAIN_GPU"),
        bound="non_negative",
        default="0",
        help="the GPU with `split-mode = none`, or the one for intermediate results and KV with "
        "`row`. Default 0",
    ),
    OptionSpec(
        "override-tensor",
        "list",
        spellings=("ot", "LLAMA_ARG_OVERRIDE_TENSOR"),
        help="buffer type of the tensors whose names match, `PATTERN=TYPE` comma-separated "
        "(`exps=CPU`)",
    ),
    OptionSpec(
        "cpu-moe",
        "bool",
        dest="gpu.cpu_moe",
        spellings=("cmoe", "LLAMA_ARG_CPU_MOE"),
        default="false",
        help="keep every Mixture-of-Experts weight on the CPU",
    ),
    OptionSpec(
        "n-cpu-moe",
        "int",
        dest="gpu.n_cpu_moe",
        spellings=("ncmoe", "LLAMA_ARG_N_CPU_MOE"),
        bound="non_negative",
        default="0",
        help="keep the Mixture-of-Experts weights of the first N layers on the CPU",
    ),
    OptionSpec(
        "n-cpu-ffn",
        "int",
        dest="gpu.n_cpu_ffn",
        spellings=("ncffn", "LLAMA_ARG_N_CPU_FFN"),
        bound="non_negative",
        default="0",
        help="keep the dense feed-forward weights of the first N layers on the CPU (dense "
        "models; MoE experts: `n-cpu-moe`)",
    ),
    OptionSpec(
        "kv-offload",
        "bool",
        dest="gpu.kv_offload",
        spellings=("kvo", "LLAMA_ARG_KV_OFFLOAD"),
        negatives=("no-kv-offload", "nkvo", "LLAMA_ARG_NO_KV_OFFLOAD"),
        default="true",
        help="KV cache on the GPU with its layers (default on; `no-kv-offload`: in host memory)",
    ),
    OptionSpec(
        "op-offload",
        "bool",
        dest="gpu.op_offload",
        negatives=("no-op-offload",),
        default="true",
        help="run host tensors' operations on the GPU (default on)",
    ),
    OptionSpec(
        "spec-draft-device",
        "list",
        spellings=("devd", "device-draft"),
        help="devices the draft model offloads to, as `device` (default: the model's)",
    ),
    OptionSpec(
        "spec-draft-cpu-moe",
        "bool",
        dest="gpu.draft_cpu_moe",
        spellings=("cmoed", "cpu-moe-draft", "LLAMA_ARG_SPEC_DRAFT_CPU_MOE"),
        default="false",
        help="keep every Mixture-of-Experts weight of the draft model on the CPU",
    ),
    OptionSpec(
        "spec-draft-n-cpu-moe",
        "int",
        dest="gpu.draft_n_cpu_moe",
        spellings=(
            "spec-draft-ncmoe",
            "ncmoed",
            "n-cpu-moe-draft",
            "LLAMA_ARG_SPEC_DRAFT_N_CPU_MOE",
        ),
        bound="non_negative",
        default="0",
        help="keep the Mixture-of-Experts weights of the draft model's first N layers on the CPU",
    ),
)
