"""LoRA adapters and control vectors."""

from __future__ import annotations

from corral.options.values import OptionSpec

__all__ = ["ROWS"]

ROWS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "lora",
        "list",
        help="LoRA adapter files applied at scale 1, comma-separated or the flag repeated; ids "
        "count from 0 in this order, then `lora-scaled`'s (docs/api.md, LoRA adapters)",
    ),
    OptionSpec(
        "lora-scaled",
        "scaled-list",
        help="LoRA adapters with their scale, `FILE:SCALE`, comma-separated or the flag repeated",
    ),
    OptionSpec(
        "lora-init-without-apply",
        "bool",
        default="false",
        dest="lora_init_without_apply",
        help="load the LoRA adapters at scale 0, to be applied by `POST /lora-adapters` or a "
        "request's `lora` field",
    ),
    # Control vectors (common/arg.cpp): added to the hidden state of the layers in the range.
    OptionSpec(
        "control-vector",
        "list",
        help="control vector files (GGUF, `direction.N` tensors), added to the hidden state at "
        "scale 1",
    ),
    OptionSpec(
        "control-vector-scaled",
        "scaled-list",
        help="control vector files with their scale, `FILE:SCALE`",
    ),
    OptionSpec(
        "control-vector-layer-range",
        "pair",
        help="the first and last layer (N of `direction.N`) the control vectors apply to; "
        "default 1 to the model's last",
    ),
)
