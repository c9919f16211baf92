"""The GPU options as llama.cpp's model and context parameters, as llama-server sets them.

common/common.cpp (``common_model_params_to_llama``) and common/arg.cpp put ``--device``,
``--split-mode``, ``--main-gpu``, ``--tensor-split``, ``--override-tensor``, ``--cpu-moe``,
``--n-cpu-moe``, ``--n-cpu-ffn``, ``--no-kv-offload`` and ``--no-op-offload`` into
``llama_model_params`` and ``llama_context_params``; this module does the same over ctypes.
The arrays the parameters point to live in a :class:`DeviceParams`, which must outlive the load.
Its tensor-split and override arrays are the writable buffers llama.cpp's fit asks for
(``llama_max_devices()`` and ``llama_max_tensor_buft_overrides()`` entries).
"""

from __future__ import annotations

import ctypes
from typing import Any

from worker.devices.settings import GpuSettings
from worker.host import ggml_backends
from worker.host.llama_bindings import llama_cpp

__all__ = ["DeviceParams", "TensorOverride"]

# common/common.h: the expert and dense feed-forward tensors, by name.
_FFN_EXPS = r"\.ffn_(up|down|gate|gate_up)_(ch|)exps"
_FFN_DENSE = r"\.ffn_(up|down|gate)\."
_SPLIT_MODES = {"none": 0, "layer": 1, "row": 2, "tensor": 3}  # enum llama_split_mode


class TensorOverride(ctypes.Structure):
    """``struct llama_model_tensor_buft_override`` (llama.h)."""

    _fields_ = (("pattern", ctypes.c_char_p), ("buft", ctypes.c_void_p))


def _buffer_types() -> dict[str, int]:
    # As common/arg.cpp parse_tensor_buffer_overrides: each device's own buffer type, by name.
    found = {}
    for device, _ in ggml_backends.devices():
        buft = ggml_backends.device_buffer_type(device)
        if buft:
            found[ggml_backends.buffer_type_name(buft)] = buft
    return found


def _overrides(gpu: GpuSettings) -> list[tuple[str, int]]:
    """(pattern, buffer type) per override, in llama-server's order: -ot, -cmoe, -ncmoe, -ncffn
    (arg.cpp applies them as the command line gives them; the options come in this order)."""
    types = _buffer_types()
    found: list[tuple[str, int]] = []
    for item in gpu.override_tensor:
        pattern, equals, name = item.partition("=")
        if not equals:
            raise ValueError(f"--override-tensor: expected PATTERN=TYPE, got '{item}'")
        if name not in types:
            known = ", ".join(sorted(types))
            raise ValueError(f"--override-tensor: unknown buffer type '{name}' (known: {known})")
        found.append((pattern, types[name]))
    cpu = ggml_backends.cpu_buffer_type()
    if gpu.cpu_moe:
        found.append((_FFN_EXPS, cpu))
    found += [(rf"blk\.{i}{_FFN_EXPS}", cpu) for i in range(gpu.n_cpu_moe)]
    found += [(rf"blk\.{i}{_FFN_DENSE}", cpu) for i in range(gpu.n_cpu_ffn)]
    return found


def _device_list(names: tuple[str, ...]) -> list[int | None]:
    # As common/arg.cpp parse_device_list: "none" is no device; a CPU or unknown name is refused.
    if names == ("none",):
        return [None]
    devices: list[int | None] = []
    for name in names:
        try:
            device: int | None = ggml_backends.device_by_name(name)
        except ValueError:
            device = None
        if device is None or ggml_backends.device_type(device) == ggml_backends.DEVICE_TYPE_CPU:
            raise ValueError(f"invalid device: {name} (--list-devices lists them)")
        devices.append(device)
    return [*devices, None]


class DeviceParams:
    """The arrays behind one load's GPU parameters; ``ValueError`` names a bad device or type."""

    def __init__(self, gpu: GpuSettings, devices: tuple[str, ...] | None = None) -> None:
        self.gpu = gpu
        names = gpu.devices if devices is None else devices
        listed = _device_list(names) if names is not None else None
        self.devices = None if listed is None else (ctypes.c_void_p * len(listed))(*listed)
        self.tensor_split = (ctypes.c_float * llama_cpp.llama_max_devices())(*gpu.tensor_split)
        overrides = _overrides(gpu)
        size = max(int(llama_cpp.llama_max_tensor_buft_overrides()), len(overrides) + 1)
        self._patterns = [pattern.encode() for pattern, _ in overrides]  # kept alive
        self.overrides = (TensorOverride * size)(
            *(TensorOverride(p, t) for p, (_, t) in zip(self._patterns, overrides, strict=True))
        )

    def apply(self, model_params: Any, context_params: Any) -> None:
        """Set the GPU fields of both parameter structs (both llama.cpp's defaults otherwise)."""
        gpu = self.gpu
        if self.devices is not None:
            model_params.devices = ctypes.addressof(self.devices)
        model_params.split_mode = _SPLIT_MODES[gpu.split_mode]
        model_params.main_gpu = gpu.main_gpu
        if gpu.tensor_split:
            model_params.tensor_split = ctypes.cast(
                self.tensor_split, ctypes.POINTER(ctypes.c_float)
            )
        # Always the (possibly empty) array, as llama-server passes its padded list: the fit
        # writes its own overrides there only when the first entry is empty.
        model_params.tensor_buft_overrides = ctypes.addressof(self.overrides)
        context_params.offload_kqv = gpu.kv_offload
        context_params.op_offload = gpu.op_offload
