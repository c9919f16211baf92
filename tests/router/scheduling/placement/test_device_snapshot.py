"""One reading of the GPUs per scheduling decision (router/scheduling/placement/device_snapshot.py).

A counting stand-in for the device inventory (the hardware seam) says how often a decision asks
the driver; with NVML each of those reads walks every GPU and every process on it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from router.capacity.devices import Device, FakeDevices, ProcessMemory
from router.catalogue.catalogue import CatalogueEntry
from router.scheduling.placement.device_planner import DevicePlanner
from router.scheduling.placement.device_snapshot import DeviceSnapshot
from router.workers.model_state import ModelState
from tests.support.scheduling_harness import harness

pytestmark = pytest.mark.anyio

G = 1 << 30
CUDA0: dict[str, Any] = {"options": (("ctx-size", "4096"), ("device", "CUDA0"))}


class CountingDevices(FakeDevices):
    """The fake inventory, counting what is read of it."""

    def __init__(self, devices: list[Device]) -> None:
        super().__init__(devices)
        self.reads: Counter[str] = Counter()

    def devices(self) -> list[Device]:
        self.reads["devices"] += 1
        return super().devices()

    def process_memory(self) -> ProcessMemory:
        self.reads["processes"] += 1
        return super().process_memory()


def counting_estimate(
    sizes: dict[str, int], calls: Counter[tuple[str, int | None]]
) -> Callable[[CatalogueEntry, int | None], int]:
    def estimate(entry: CatalogueEntry, ctx: int | None) -> int:
        calls[(entry.name, ctx)] += 1
        return sizes[entry.name]

    return estimate


def on_cuda0(size: int) -> list[dict[str, object]]:
    return [{"name": "CUDA0", "layers": 30, "model_bytes": size}]


def pid(state: ModelState) -> int:
    assert state.process is not None
    return state.process.pid


async def test_a_decision_reads_the_gpus_once_however_many_models_it_weighs() -> None:
    inventory = CountingDevices([Device("CUDA0", 24 * G, 24 * G), Device("CUDA1", 24 * G, 24 * G)])
    estimates: Counter[tuple[str, int | None]] = Counter()
    sizes = {name: 7 * G for name in "abcd"}
    planner = DevicePlanner(inventory, estimate=counting_estimate(sizes, estimates))
    async with harness(0, names="abcd", devices=planner, a=CUDA0, b=CUDA0, c=CUDA0, d=CUDA0) as h:
        for name in "abc":
            h.busy(await h.load(name, on_cuda0(7 * G)))  # busy: none may be evicted
        # The driver counts each worker's process: every running model is asked about.
        inventory.processes = {pid(h.state(n)): {"CUDA0": 7 * G} for n in "abc"}
        async with anyio.create_task_group() as group:
            group.start_soon(h.request, "d")  # 4 * 7 GiB > 23 GiB: d waits
            await h.until(lambda: h.scheduler.queue_depth == 1)
            inventory.reads.clear()
            estimates.clear()
            h.scheduler.tick()  # one decision: who must make room for d
            assert inventory.reads == {"devices": 1, "processes": 1}
            assert max(estimates.values()) == 1  # each model at each context estimated once
            for name in "abc":
                h.done(h.state(name))
            await h.launched("d")
            h.launcher.children["d"].ready(on_cuda0(7 * G))


def test_a_placement_reads_the_gpus_once() -> None:
    inventory = CountingDevices([Device("CUDA0", 24 * G, 24 * G), Device("CUDA1", 24 * G, 24 * G)])
    estimates: Counter[tuple[str, int | None]] = Counter()
    planner = DevicePlanner(
        inventory, most_resident=3, estimate=counting_estimate(dict.fromkeys("abc", G), estimates)
    )
    states = [
        ModelState.unloaded(CatalogueEntry(name, Path(f"/m/{name}.gguf"), "models_dir"))
        for name in "abc"
    ]
    planner.place(states[0], [], states)
    assert inventory.reads == {"devices": 1}  # nothing runs: no process to ask about
    assert max(estimates.values()) == 1


def test_a_snapshot_reads_nothing_it_is_not_asked() -> None:
    inventory = CountingDevices([Device("CUDA0", 24 * G, 24 * G)])
    snap = DeviceSnapshot(inventory, lambda entry, ctx: G)
    assert inventory.reads == {}
    assert [d.name for d in snap.devices] == [d.name for d in snap.devices] == ["CUDA0"]
    assert snap.process_memory(1) is None
    assert snap.process_memory(2) is None
    assert inventory.reads == {"devices": 1, "processes": 1}
