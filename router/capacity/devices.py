"""Which GPUs the router's models can use, and how much memory each has free: the device seam.

The router never opens a GPU context of its own (a CUDA context costs 0.1 to 0.6 GiB per process
per device, and the router would pay it for nothing). It reads memory where that costs nothing:

- :class:`NvmlDevices`: NVIDIA's management library through ``nvidia-ml-py`` (NVIDIA's
  binding), imported only when asked. No library, no driver, no GPU: no devices, no error.
- what the workers report: a loaded worker's ``ready`` payload lists every GPU its llama.cpp
  sees (``gpu_devices``), which covers the back-ends NVML does not (Vulkan, ROCm, Metal); the
  worker pool keeps the latest such list (:meth:`WorkerPool.reported_devices`).
- :class:`FakeDevices`: given free and total per device, for tests. ``CORRAL_FAKE_DEVICES``
  selects it in a real ``corral serve`` (a test seam, docs/operations.md): e.g.
  ``CORRAL_FAKE_DEVICES="CUDA0=20GiB/24GiB,CUDA1=24GiB/24GiB"`` (free/total). The workers
  inherit the variable and see the same devices (corral/children/fake_devices.py).

Devices are named as llama.cpp names them (``CUDA0``, ``CUDA1``, …), so a placement can be
handed to a worker as its ``--device``. NVML numbers devices in PCI bus order; workers are
started with ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (unless set) so that CUDA numbers them alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from corral.children.device_use import DeviceInfo
from corral.children.fake_devices import FAKE_DEVICES_VARIABLE
from corral.children.fake_devices import parse_fake_devices as _parse

__all__ = [
    "FAKE_DEVICES_VARIABLE",
    "Device",
    "DeviceInventory",
    "FakeDevices",
    "NoDevices",
    "NvmlDevices",
    "ProcessMemory",
    "ReportedDevices",
    "device_inventory",
    "parse_fake_devices",
]

_log = structlog.get_logger("corral.devices")


@dataclass(frozen=True, slots=True)
class Device:
    """One GPU as its driver sees it now: ``free`` and ``total`` in bytes."""

    name: str  # as llama.cpp names it: CUDA0, Vulkan1, ROCm0 …
    free: int
    total: int
    description: str = ""

    @property
    def used(self) -> int:
        return max(self.total - self.free, 0)


# Bytes each process holds on each GPU, as the driver counts them (its CUDA context included).
ProcessMemory = dict[int, dict[str, int]]


class DeviceInventory(Protocol):
    def devices(self) -> list[Device]:
        """Every GPU, with its free memory as of now; [] when there is none."""
        ...

    def process_memory(self) -> ProcessMemory:
        """What each process holds on each GPU, where the driver tells; {} where it does not."""
        ...


class NoDevices:
    """A machine without GPUs, or one whose GPUs the router cannot read."""

    def devices(self) -> list[Device]:
        return []

    def process_memory(self) -> ProcessMemory:
        return {}


class FakeDevices:
    """Given free and total bytes per device; a test may change them as it goes."""

    def __init__(self, devices: list[Device]) -> None:
        self._devices = {device.name: device for device in devices}
        self.processes: ProcessMemory = {}  # what the driver would say each pid holds

    def devices(self) -> list[Device]:
        return list(self._devices.values())

    def process_memory(self) -> ProcessMemory:
        return {pid: dict(held) for pid, held in self.processes.items()}

    def set_free(self, name: str, free: int) -> None:
        """As the driver would say after something outside Corral took or gave back memory."""
        device = self._devices[name]
        self._devices[name] = Device(name, free, device.total, device.description)


def parse_fake_devices(spec: str) -> list[Device]:
    """``"CUDA0=20GiB/24GiB,CUDA1=24GiB/24GiB"``: each device's free/total (the workers read the
    same variable the same way: corral/children/fake_devices.py)."""
    return [Device(d.name, d.free, d.total, d.description) for d in _parse(spec)]


class NvmlDevices:
    """NVIDIA GPUs through NVML; read on each call (free memory changes as workers come and go).

    ``pynvml`` is the module ``nvidia-ml-py`` installs. NVML needs no CUDA context: reading
    free memory this way costs the GPUs nothing.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._nvml: Any = None
        self._visible = _visible_devices((environ or os.environ).get("CUDA_VISIBLE_DEVICES"))
        try:
            import pynvml  # lazy: most machines have no NVIDIA driver

            pynvml.nvmlInit()
        except Exception as error:  # ImportError, or pynvml.NVMLError: no library or driver
            _log.debug("no NVIDIA devices", reason=str(error))
            return
        self._nvml = pynvml

    def _handles(self) -> list[tuple[str, Any]]:
        """Each GPU's handle, named as CUDA numbers it for the workers."""
        nvml = self._nvml
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
        if self._visible is not None:
            handles = [_visible_handle(nvml, handles, item) for item in self._visible]
        return [
            (f"CUDA{i}", handle) for i, handle in enumerate(h for h in handles if h is not None)
        ]

    def devices(self) -> list[Device]:
        nvml = self._nvml
        if nvml is None:
            return []
        try:
            devices = []
            for name, handle in self._handles():
                memory = nvml.nvmlDeviceGetMemoryInfo(handle)
                description = nvml.nvmlDeviceGetName(handle)
                if isinstance(description, bytes):
                    description = description.decode()
                devices.append(Device(name, int(memory.free), int(memory.total), str(description)))
            return devices
        except nvml.NVMLError as error:  # a GPU fell off the bus, the driver was reloaded …
            _log.warning("cannot read the NVIDIA devices", error=str(error))
            return []

    def process_memory(self) -> ProcessMemory:
        """From the driver's list of compute processes per GPU. Empty where it cannot say: in a
        container with its own PID namespace the driver's pids are the host's, and match none."""
        nvml = self._nvml
        held: ProcessMemory = {}
        if nvml is None:
            return held
        try:
            for name, handle in self._handles():
                for process in nvml.nvmlDeviceGetComputeRunningProcesses(handle):
                    used = process.usedGpuMemory
                    if used:  # None when the driver cannot tell (some vGPU, MIG setups)
                        held.setdefault(int(process.pid), {})[name] = int(used)
        except nvml.NVMLError as error:
            _log.debug("no per-process GPU memory", error=str(error))
            return {}
        return held


def _visible_devices(value: str | None) -> list[str] | None:
    """``CUDA_VISIBLE_DEVICES`` as CUDA reads it: indices or UUIDs, up to the first bad entry."""
    if value is None:
        return None
    return [item.strip() for item in value.split(",") if item.strip()]


def _visible_handle(nvml: Any, handles: list[Any], item: str) -> Any:
    if item.isdigit():
        return handles[int(item)] if int(item) < len(handles) else None
    for handle in handles:  # a UUID (GPU-…), or its prefix as CUDA allows
        uuid = nvml.nvmlDeviceGetUUID(handle)
        uuid = uuid.decode() if isinstance(uuid, bytes) else str(uuid)
        if uuid.startswith(item):
            return handle
    return None


class ReportedDevices:
    """``inventory``'s devices; when it sees none, the GPUs the latest loaded worker reported
    (other back-ends than NVIDIA: their free memory as of that load), RPC servers' left out."""

    def __init__(
        self, inventory: DeviceInventory, reported: Callable[[], Sequence[DeviceInfo]]
    ) -> None:
        self._inventory = inventory
        self._reported = reported

    def devices(self) -> list[Device]:
        # An RPC server's device (--rpc) is another machine's: not the router's to place on.
        return self._inventory.devices() or [
            Device(info.name, info.free, info.total, info.description)
            for info in self._reported()
            if not info.name.startswith("RPC")
        ]

    def process_memory(self) -> ProcessMemory:
        return self._inventory.process_memory()


def device_inventory(environ: Mapping[str, str] | None = None) -> DeviceInventory:
    """The fake when ``CORRAL_FAKE_DEVICES`` is set (tests), else NVML (none if unavailable)."""
    environ = os.environ if environ is None else environ
    spec = environ.get(FAKE_DEVICES_VARIABLE)
    if spec is not None:
        return FakeDevices(parse_fake_devices(spec))
    return NvmlDevices(environ)
