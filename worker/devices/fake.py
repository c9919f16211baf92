"""A worker on fake GPUs (``CORRAL_FAKE_DEVICES``, corral/children/fake_devices.py): the test seam
that lets a machine without a GPU run the router's GPU rules over real workers.

The router places models on the fake devices and hands each worker its ``--device`` (and
``--tensor-split``) as it would on a real machine. llama.cpp has no such devices, so the worker
loads on the CPU (:func:`on_real_devices`: the fake names leave the parameters, and with them
llama.cpp's fit, which measures real devices only) and then reports the model as if its buffers
had gone where it was told (:func:`as_placed`): the layers and bytes llama.cpp put on the CPU
move to the fake devices, split as ``--tensor-split`` says (else by each device's free memory, as
llama.cpp splits). So the router measures a real footprint from a real worker, as it would on a
GPU. The fake devices are also the worker's GPUs in ``ready`` and ``--list-devices``
(worker/devices/inventory.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from corral.children.device_use import DeviceInfo
from worker.devices.settings import GpuSettings

__all__ = ["as_placed", "on_real_devices"]

_CPU = "CPU"
_PARTS = ("model_bytes", "context_bytes", "compute_bytes")


def on_real_devices(gpu: GpuSettings) -> GpuSettings:
    """The settings llama.cpp gets beside fake devices: no device (the CPU), no split."""
    return replace(gpu, devices=("none",), tensor_split=(), main_gpu=0, draft_devices=("none",))


def _targets(gpu: GpuSettings, fakes: Sequence[DeviceInfo]) -> list[str]:
    known = [fake.name for fake in fakes]
    return [name for name in (gpu.devices or known) if name in known]


def _shares(
    names: Sequence[str], split: Sequence[float], fakes: Sequence[DeviceInfo]
) -> list[float]:
    """Each device's part, as llama.cpp splits layers: ``--tensor-split``, else free memory."""
    given = [max(float(x), 0.0) for x in split[: len(names)]]
    if len(given) == len(names) and sum(given) > 0:
        return [x / sum(given) for x in given]
    free = {fake.name: fake.free for fake in fakes}
    weights = [float(free[name]) for name in names]
    total = sum(weights)
    return [w / total for w in weights] if total > 0 else [1 / len(names)] * len(names)


def _apportion(amount: int, shares: Sequence[float]) -> list[int]:
    """``amount`` split by ``shares`` in whole units, the remainders to the largest fractions."""
    exact = [amount * share for share in shares]
    parts = [int(x) for x in exact]
    order = sorted(range(len(shares)), key=lambda i: exact[i] - parts[i], reverse=True)
    for i in order[: amount - sum(parts)]:
        parts[i] += 1
    return parts


def as_placed(
    devices: list[dict[str, Any]],
    gpu: GpuSettings,
    n_gpu_layers: int,
    fakes: Sequence[DeviceInfo],
) -> list[dict[str, Any]]:
    """``meta.devices`` of a load on the CPU, as if its offloaded layers had gone to the fake
    devices ``gpu`` names (every fake device when it names none); unchanged for a CPU model."""
    names = _targets(gpu, fakes)
    cpu = next((d for d in devices if d["name"] == _CPU), None)
    if gpu.devices == ("none",) or n_gpu_layers == 0 or not names or cpu is None:
        return devices
    layers = int(cpu["layers"])
    if layers <= 0:
        return devices
    moved = layers if n_gpu_layers < 0 else min(n_gpu_layers, layers)
    shares = _shares(names, gpu.tensor_split, fakes)
    counts = _apportion(moved, shares)
    placed = [{"name": name, "layers": n} for name, n in zip(names, counts, strict=True)]
    left = {"name": _CPU, "layers": layers - moved}
    for part in _PARTS:
        total = int(cpu.get(part, 0))
        going = total * moved // layers
        left[part] = total - going
        for entry, share in zip(placed, _apportion(going, shares), strict=True):
            entry[part] = share
    others = [d for d in devices if d["name"] != _CPU]
    return [left, *placed, *others]
