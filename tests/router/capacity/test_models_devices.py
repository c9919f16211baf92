"""``GET /models`` on GPUs: what each running model holds per device and where the router put it,
rendered from the fake inventory and a worker's device report (fake launcher)."""

from __future__ import annotations

import msgspec
import pytest

from corral.children.device_use import OutOfMemory
from router.api.models import _entry
from router.capacity.devices import Device, FakeDevices
from router.scheduling.placement.device_planner import DevicePlanner
from tests.support.fakes.two_gpus import split_over_two_gpus
from tests.support.scheduling_harness import harness

pytestmark = pytest.mark.anyio

G = 1 << 30


async def test_a_running_model_lists_its_bytes_per_gpu_and_its_placement() -> None:
    async with split_over_two_gpus() as split:
        a, report = split.state, split.report
        listed = msgspec.to_builtins(_entry(a, 0))
        assert listed["memory"]["vram"] == 25 * G + G // 4
        assert listed["memory"]["devices"] == {"CUDA0": 13 * G, "CUDA1": 12 * G + G // 4}
        assert listed["meta"]["devices"] == report  # the worker's layers and bytes, as sent
        # 30 GiB fit on no GPU alone: split over both, with llama.cpp's margin kept on each.
        assert listed["placement"] == {
            "devices": ["CUDA0", "CUDA1"],
            "fits": True,
            "needed": 30 * G,
            "fit_target_mib": [1024, 1024],
            "tensor_split": [0.5, 0.5],  # as much room on each
        }
        assert "--device" in listed["status"]["args"]
        assert "--tensor-split" in listed["status"]["args"]
        await split.harness.pool.stop(a)
        stopped = msgspec.to_builtins(_entry(a, 0))
        assert "placement" not in stopped
        assert "memory" not in stopped


async def test_an_rpc_servers_bytes_are_not_this_machines_vram() -> None:
    devices = FakeDevices([Device("CUDA0", 24 * G, 24 * G)])
    async with harness(0, names="a", devices=DevicePlanner(devices)) as h:
        report = [
            {"name": "CPU", "layers": 1, "model_bytes": G},
            {"name": "RPC0[10.0.0.2:50052]", "layers": 20, "model_bytes": 3 * G},
            {"name": "CUDA0", "layers": 10, "model_bytes": 2 * G},
        ]
        a = await h.load("a", report)
        assert a.gpu_bytes == {"CUDA0": 2 * G}
        assert msgspec.to_builtins(_entry(a, 0))["memory"]["vram"] == 2 * G


async def test_a_load_out_of_gpu_memory_says_so_as_its_reason() -> None:
    async with harness(0, names="ab") as h:
        a, b = h.state("a"), h.state("b")
        h.pool.start(a)
        h.pool.start(b)
        await h.launched("a")
        await h.launched("b")
        h.launcher.children["a"].crash(1, OutOfMemory("CUDA0", 9 * G, 3 * G).format())
        h.launcher.children["b"].crash(1, "bad magic in GGUF header")
        await h.until(lambda: a.failed and b.failed)
        status = msgspec.to_builtins(_entry(a, 0))["status"]
        assert status["reason"] == "out_of_memory"
        assert "out of memory on CUDA0: needs 9216 MiB, 3072 MiB free" in status["error"]
        assert msgspec.to_builtins(_entry(b, 0))["status"]["reason"] == "crashed"


async def test_the_drivers_count_of_a_workers_process_wins_over_its_own_report() -> None:
    # The driver counts the worker's CUDA context too, which llama.cpp's breakdown leaves out.
    devices = FakeDevices([Device("CUDA0", 24 * G, 24 * G)])
    planner = DevicePlanner(devices)
    async with harness(0, names="a", devices=planner) as h:
        a = await h.load("a", [{"name": "CUDA0", "layers": 10, "model_bytes": 2 * G}])
        assert a.process is not None
        devices.processes = {a.process.pid: {"CUDA0": 2 * G + G // 2}}
        listed = msgspec.to_builtins(_entry(a, 0, on_gpus=planner.in_use(a)))
        assert listed["memory"]["devices"] == {"CUDA0": 2 * G + G // 2}
        assert planner.held(a) == {"CUDA0": 2 * G + G // 2}
        # Its bytes are Corral's, not someone else's: the room is the total less them and the
        # margin, however much the driver says is used (the fake's free is what it was given).
        rooms = planner.rooms(devices.devices(), [a], [a])
        assert rooms == {"CUDA0": 24 * G - 1024 * (1 << 20) - (2 * G + G // 2)}
