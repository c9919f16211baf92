"""``/api/ps``'s ``size`` and ``size_vram`` from what the router reads of a worker's memory: the
device planner's bytes per GPU on the fake inventory, and a worker's device report (fake
launcher), as ``GET /models`` reads them."""

from __future__ import annotations

import pytest

from router.api.ollama.listing import memory_in_ps
from router.capacity.devices import FakeDevices
from router.scheduling.placement.device_planner import DevicePlanner
from tests.support.fakes.two_gpus import split_over_two_gpus
from tests.support.scheduling_harness import harness

pytestmark = pytest.mark.anyio

G = 1 << 30


async def test_size_vram_is_the_bytes_the_worker_holds_on_gpus() -> None:
    async with split_over_two_gpus() as split:
        a, planner = split.state, split.planner
        memory = memory_in_ps(a, planner.in_use(a), 2 * G, 3 * G)
        # Resident memory plus VRAM (25.25 GiB in the worker's report).
        assert memory == {"size": 27 * G + G // 4, "size_vram": 25 * G + G // 4}
        assert a.process is not None
        split.devices.processes[a.process.pid] = {"CUDA0": 14 * G, "CUDA1": 13 * G}
        memory = memory_in_ps(a, planner.in_use(a), 2 * G, 3 * G)  # the driver's count wins
        assert memory["size_vram"] == 27 * G


async def test_a_worker_on_the_cpu_holds_no_vram() -> None:
    async with harness(1, names="a", devices=DevicePlanner(FakeDevices([]))) as h:
        a = await h.load("a", [{"name": "CPU", "layers": 31, "model_bytes": 2 * G}])
        assert memory_in_ps(a, {}, 2 * G, 3 * G) == {"size": 2 * G, "size_vram": 0}
        assert memory_in_ps(a, {}, None, 3 * G) == {"size": 3 * G, "size_vram": 0}


async def test_gpu_layers_whose_bytes_nobody_measured_give_no_size_vram() -> None:
    async with harness(1, names="a") as h:
        a = await h.load("a", [{"name": "Vulkan0", "layers": 31}])
        assert memory_in_ps(a, {}, 2 * G, 3 * G) == {"size": 2 * G}
