"""The ggml devices this worker's llama.cpp sees: for ``ready`` and ``--list-devices``.

Read through ggml's own registry (``ggml_backend_dev_memory``), so every back-end a build has
(CUDA, Vulkan, Metal, RPC) is listed the same way, as llama-server lists them
(common/arg.cpp ``common_print_available_devices``): every device but the CPU. With
``CORRAL_FAKE_DEVICES`` set (a test seam), the fake devices instead, as the router sees them
(worker/devices/fake.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from corral.children.device_use import DeviceInfo
from corral.children.fake_devices import fake_devices
from worker.host import ggml_backends

__all__ = ["gpu_devices", "list_devices_text"]

_MIB = 1 << 20


def gpu_devices(labels: Mapping[str, str] | None = None) -> list[DeviceInfo]:
    """Every non-CPU device with its free and total memory now; ``labels`` renames devices
    (an RPC device's name gets its server's address, as in ``meta.devices``)."""
    fakes = fake_devices()
    if fakes is not None:
        return fakes
    found = []
    for device, kind in ggml_backends.devices():
        if kind != ggml_backends.DEVICE_TYPE_CPU:
            free, total = ggml_backends.device_memory(device)
            name = ggml_backends.device_name(device)
            found.append(
                DeviceInfo(
                    name=(labels or {}).get(name, name),
                    description=ggml_backends.device_description(device),
                    free=free,
                    total=total,
                )
            )
    return found


def list_devices_text(devices: list[DeviceInfo]) -> str:
    """llama-server's ``--list-devices`` output, line for line."""
    lines = ["Available devices:"]
    lines += [
        f"  {d.name}: {d.description} ({d.total // _MIB} MiB, {d.free // _MIB} MiB free)"
        for d in devices
    ] or ["  (none)"]
    return "\n".join(lines) + "\n"
