"""A worker's GPU settings, read from its option flags as llama-server reads them (common/arg.cpp).

Parsing never fails here: the option table has checked every value, and what a build cannot do
(a device it does not have) is the load's to refuse, with its reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

__all__ = ["DEFAULT_FIT_TARGET_MIB", "GpuSettings", "gpu_settings"]

# llama-server's defaults (common/common.h: fit_params_target, fit_params_min_ctx).
DEFAULT_FIT_TARGET_MIB = 1024
_DEFAULT_FIT_CTX = 4096


@dataclass(frozen=True, slots=True)
class GpuSettings:
    devices: tuple[str, ...] | None = None  # --device; None: every GPU; ("none",): no offload
    fit: bool = True  # --fit on|off
    fit_target_mib: tuple[int, ...] = (DEFAULT_FIT_TARGET_MIB,)  # one value: every device
    fit_ctx: int = _DEFAULT_FIT_CTX  # --fit-ctx: the smallest context the fit may choose
    split_mode: str = "layer"  # none, layer, row or tensor
    tensor_split: tuple[float, ...] = ()  # proportions per device; empty: llama.cpp's own
    main_gpu: int = 0
    override_tensor: tuple[str, ...] = ()  # PATTERN=BUFFER_TYPE
    cpu_moe: bool = False
    n_cpu_moe: int = 0
    n_cpu_ffn: int = 0
    kv_offload: bool = True
    op_offload: bool = True
    draft_devices: tuple[str, ...] | None = None  # --spec-draft-device; None: as --device

    def for_draft(self) -> GpuSettings:
        """A draft model's, as llama-server derives them (common_base_params_to_speculative):
        its own devices if given, the split as the model's, none of the model's overrides."""
        return replace(
            self,
            devices=self.draft_devices or self.devices,
            override_tensor=(),
            cpu_moe=False,
            n_cpu_moe=0,
            n_cpu_ffn=0,
        )


def _items(value: str | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(item for item in value.split(",") if item)


def gpu_settings(options: Mapping[str, str]) -> GpuSettings:
    """The GPU options among a worker's normalised options."""
    defaults = GpuSettings()
    return GpuSettings(
        devices=_items(options.get("device")),
        fit=options.get("fit", "on") == "on",
        fit_target_mib=tuple(int(float(mib)) for mib in _items(options.get("fit-target")) or ())
        or defaults.fit_target_mib,
        fit_ctx=int(options.get("fit-ctx", defaults.fit_ctx)),
        split_mode=options.get("split-mode", defaults.split_mode),
        tensor_split=tuple(float(share) for share in _items(options.get("tensor-split")) or ()),
        main_gpu=int(options.get("main-gpu", defaults.main_gpu)),
        override_tensor=_items(options.get("override-tensor")) or (),
        cpu_moe=options.get("cpu-moe", "false") == "true",
        n_cpu_moe=int(options.get("n-cpu-moe", 0)),
        n_cpu_ffn=int(options.get("n-cpu-ffn", 0)),
        kv_offload=options.get("kv-offload", "true") == "true",
        op_offload=options.get("op-offload", "true") == "true",
        draft_devices=_items(options.get("spec-draft-device")),
    )
