"""What one scheduling decision knows of the GPUs: read once, then asked as often as it likes.

A decision (a tick of the queue, a claim, a placement, a direct load) asks the device planner
many questions: how much room each device has, what each running model holds there, what each
coming model needs. Asked of the hardware each time, every question read the driver again
(NVML: the devices, then every process on every device, once per running model), and every
estimate read its files' sizes and GGUF header again; every waiter takes such decisions on every
line a worker writes. A :class:`DeviceSnapshot` reads the inventory at most once and the
per-process counts at most once, and keeps each model's estimate; the decision passes it down.
Between decisions nothing is kept but the headers (per file version, in
router/catalogue/model_details.py): free memory changes as workers come and go.
"""

from __future__ import annotations

from collections.abc import Callable

from router.capacity.devices import Device, DeviceInventory, ProcessMemory
from router.catalogue.catalogue import CatalogueEntry

__all__ = ["DeviceSnapshot", "Estimate"]

# What a model takes on the GPUs at a context (None: its own), before it was ever measured.
Estimate = Callable[[CatalogueEntry, int | None], int]


class DeviceSnapshot:
    def __init__(self, inventory: DeviceInventory, estimate: Estimate) -> None:
        self._inventory = inventory
        self._estimate = estimate
        self._devices: list[Device] | None = None
        self._processes: ProcessMemory | None = None
        self._estimates: dict[tuple[CatalogueEntry, int | None], int] = {}

    @property
    def devices(self) -> list[Device]:
        """Every GPU with its free memory, as of the first question."""
        if self._devices is None:
            self._devices = self._inventory.devices()
        return self._devices

    def process_memory(self, pid: int) -> dict[str, int] | None:
        """What the driver says process ``pid`` holds per GPU; None where it does not say."""
        if self._processes is None:
            self._processes = self._inventory.process_memory()
        return self._processes.get(pid)

    def estimate(self, entry: CatalogueEntry, ctx: int | None) -> int:
        """What ``entry`` takes at ``ctx`` tokens, estimated once per decision."""
        key = (entry, ctx)
        if key not in self._estimates:
            self._estimates[key] = self._estimate(entry, ctx)
        return self._estimates[key]
