"""A worker's GPU settings, read from its option flags as llama-server reads them (common/arg.cpp).

Each option row whose ``dest`` is ``gpu.<field>`` fills that field (worker/settings/parse.py);
:func:`gpu_fields` derives the others. Parsing never fails here: the option table has checked
every value, and what a build cannot do (a device it does not have) is the load's to refuse,
with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from corral.options.model_options import ModelOptions

__all__ = ["DEFAULT_FIT_TARGET_MIB", "GpuSettings", "gpu_fields"]

_SERVER = ModelOptions()  # llama-server's defaults (common/common.h), from the option table
# fit_params_target: what the fit leaves free on each device.
DEFAULT_FIT_TARGET_MIB = int(_SERVER.items("fit-target")[0])


@dataclass(frozen=True, slots=True)
class GpuSettings:
    devices: tuple[str, ...] | None = None  # --device; None: every GPU; ("none",): no offload
    fit: bool = _SERVER.flag("fit")  # --fit on|off
    fit_target_mib: tuple[int, ...] = (DEFAULT_FIT_TARGET_MIB,)  # one value: every device
    fit_ctx: int = _SERVER.integer("fit-ctx")  # --fit-ctx: the smallest context the fit may choose
    split_mode: str = _SERVER.word("split-mode")  # none, layer, row or tensor
    tensor_split: tuple[float, ...] = ()  # proportions per device; empty: llama.cpp's own
    main_gpu: int = _SERVER.integer("main-gpu")
    override_tensor: tuple[str, ...] = ()  # PATTERN=BUFFER_TYPE
    cpu_moe: bool = _SERVER.flag("cpu-moe")
    n_cpu_moe: int = _SERVER.integer("n-cpu-moe")
    n_cpu_ffn: int = _SERVER.integer("n-cpu-ffn")
    kv_offload: bool = _SERVER.flag("kv-offload")
    op_offload: bool = _SERVER.flag("op-offload")
    draft_devices: tuple[str, ...] | None = None  # --spec-draft-device; None: as --device
    draft_cpu_moe: bool = _SERVER.flag("spec-draft-cpu-moe")  # the draft's own --cpu-moe
    draft_n_cpu_moe: int = _SERVER.integer("spec-draft-n-cpu-moe")  # and its own --n-cpu-moe

    def for_draft(self) -> GpuSettings:
        """A draft model's, as llama-server derives them (common_base_params_to_speculative):
        its own devices if given, the split as the model's, none of the model's overrides but
        its own --spec-draft-[n-]cpu-moe."""
        return replace(
            self,
            devices=self.draft_devices or self.devices,
            override_tensor=(),
            cpu_moe=self.draft_cpu_moe,
            n_cpu_moe=self.draft_n_cpu_moe,
            n_cpu_ffn=0,
        )


def _items(options: ModelOptions, name: str) -> tuple[str, ...] | None:
    return options.items(name) if name in options else None


def gpu_fields(options: ModelOptions) -> dict[str, Any]:
    """The GPU settings no option row fills by its ``dest`` (``gpu.split_mode``): the lists."""
    return {
        "devices": _items(options, "device"),
        "fit_target_mib": tuple(int(float(mib)) for mib in options.items("fit-target")),
        "tensor_split": tuple(float(share) for share in options.items("tensor-split")),
        "override_tensor": options.items("override-tensor"),
        "draft_devices": _items(options, "spec-draft-device"),
    }
