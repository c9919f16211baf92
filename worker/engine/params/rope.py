"""RoPE and YaRN context scaling: llama-server's ``--rope-*`` and ``--yarn-*`` flags as
``llama_context_params`` fields."""

from __future__ import annotations

from typing import Any

from worker.host.llama_bindings import llama_cpp
from worker.settings.groups import RopeSettings

__all__ = ["set_rope"]


_ROPE_SCALING = {
    "none": llama_cpp.LLAMA_ROPE_SCALING_TYPE_NONE,
    "linear": llama_cpp.LLAMA_ROPE_SCALING_TYPE_LINEAR,
    "yarn": llama_cpp.LLAMA_ROPE_SCALING_TYPE_YARN,
}


def set_rope(params: Any, rope: RopeSettings) -> None:
    """The context's RoPE and YaRN settings that were given; the rest stay the model's."""
    if rope.scaling is not None:
        params.rope_scaling_type = _ROPE_SCALING[rope.scaling]
    for field in (
        "freq_scale",
        "yarn_orig_ctx",
        "yarn_ext_factor",
        "yarn_attn_factor",
        "yarn_beta_slow",
        "yarn_beta_fast",
    ):
        if (value := getattr(rope, field)) is not None:
            setattr(params, field if field.startswith("yarn") else f"rope_{field}", value)
