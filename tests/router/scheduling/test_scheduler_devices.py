"""Scheduling by GPU memory (docs/operations.md, GPUs), driven through the fake launcher like
tests/router/scheduling/test_scheduler.py, over a fake inventory of two 24 GiB GPUs. What a
model takes is estimated by a stand-in until its worker reports its bytes per device."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from corral.children.device_use import OutOfMemory
from corral.children.protocol import StateMessage
from router.availability.errors import OutOfDeviceMemory
from router.capacity.devices import Device, FakeDevices
from router.catalogue.catalogue import CatalogueEntry
from router.scheduling.answers import api_error
from router.scheduling.placement.device_planner import DevicePlanner
from router.workers.model_state import Status
from tests.support.scheduling_harness import Harness, harness

pytestmark = pytest.mark.anyio

G = 1 << 30


def planner(sizes: Mapping[str, int], models_max: int = 0) -> DevicePlanner:
    devices = FakeDevices([Device("CUDA0", 24 * G, 24 * G), Device("CUDA1", 24 * G, 24 * G)])
    return DevicePlanner(
        devices, most_resident=models_max, estimate=lambda entry, ctx: sizes[entry.name]
    )


def on(device: str, size: int) -> list[dict[str, Any]]:
    """A worker's report: ``size`` bytes on ``device`` (weights and KV), nothing else."""
    return [
        {"name": "CPU", "layers": 1},
        {"name": device, "layers": 30, "model_bytes": size * 3 // 4, "context_bytes": size // 4},
    ]


def device_flag(h: Harness, name: str) -> str:
    args = h.state(name).args
    return args[args.index("--device") + 1]


def pinned(device: str) -> dict[str, Any]:
    return {"options": (("ctx-size", "4096"), ("device", device))}


async def test_each_model_goes_to_the_gpu_with_the_most_room_and_its_worker_is_told() -> None:
    sizes = {"a": 10 * G, "b": 10 * G, "c": 10 * G}
    async with harness(0, names="abc", devices=planner(sizes)) as h:
        await h.load("a", on("CUDA0", 10 * G))
        await h.load("b", on("CUDA1", 12 * G))  # it took more than expected: CUDA1 has less
        await h.load("c", on("CUDA0", 10 * G))
        assert [device_flag(h, name) for name in "abc"] == ["CUDA0", "CUDA1", "CUDA0"]
        assert h.state("b").gpu_bytes == {"CUDA1": 12 * G}
        assert h.scheduler.evictions == 0


async def test_idle_models_on_the_device_that_needs_room_go_least_recent_first() -> None:
    sizes = {name: 10 * G for name in "abcd"}
    cuda0, cuda1 = pinned("CUDA0"), pinned("CUDA1")
    async with harness(0, devices=planner(sizes), a=cuda0, b=cuda1, c=cuda0, d=cuda0) as h:
        a = await h.load("a", on("CUDA0", 10 * G))
        b = await h.load("b", on("CUDA1", 10 * G))
        c = await h.load("c", on("CUDA0", 10 * G))
        h.used_at(b, 1.0)  # the least recent of all, but on the GPU that has room
        h.used_at(a, 2.0)
        h.used_at(c, 3.0)
        d = await h.load("d", on("CUDA0", 10 * G))  # 10 + 10 + 10 > 23 GiB on CUDA0
        assert (a.status, b.status, c.status, d.status) == (
            Status.UNLOADED,
            Status.LOADED,
            Status.LOADED,
            Status.LOADED,
        )
        assert h.scheduler.evictions == 1


async def test_a_sleeping_model_holds_no_room_it_freed() -> None:
    """Asleep, a worker has freed its weights and KV cache (``--sleep-idle-seconds``): where the
    driver gives no per-process figure, what it reported at load no longer counts."""
    sizes = {name: 10 * G for name in "acd"}
    cuda0 = pinned("CUDA0")
    async with harness(0, names="acd", devices=planner(sizes), a=cuda0, c=cuda0, d=cuda0) as h:
        a = await h.load("a", on("CUDA0", 10 * G))
        await h.load("c", on("CUDA0", 10 * G))
        h.launcher.children["a"].say(StateMessage("sleeping", {}))
        await h.until(lambda: a.status is Status.SLEEPING)
        d = await h.load("d", on("CUDA0", 10 * G))  # 10 + 10 <= 23 GiB once a sleeps
        assert (a.status, d.status, h.scheduler.evictions) == (Status.SLEEPING, Status.LOADED, 0)


async def test_a_busy_model_is_never_evicted_for_gpu_memory() -> None:
    sizes = {"a": 15 * G, "b": 15 * G}
    cuda0 = pinned("CUDA0")
    async with harness(0, names="ab", devices=planner(sizes), a=cuda0, b=cuda0) as h:
        a = await h.load("a", on("CUDA0", 15 * G))
        h.busy(a)
        async with anyio.create_task_group() as group:
            group.start_soon(h.request, "b")
            await h.until(lambda: h.scheduler.queue_depth == 1)
            h.scheduler.tick()
            assert not a.stop_requested
            assert h.launcher.launched == ["a"]
            h.done(a)  # idle now: it may make room
            await h.launched("b")
            h.launcher.children["b"].ready(on("CUDA0", 15 * G))
        assert a.status is Status.UNLOADED


async def test_a_model_that_fits_nowhere_alone_still_loads_over_every_gpu() -> None:
    async with harness(0, names="a", devices=planner({"a": 60 * G})) as h:
        a = await h.load("a", on("CUDA0", 23 * G))
        assert device_flag(h, "a") == "CUDA0,CUDA1"
        assert a.placement is not None
        assert not a.placement.fits


async def _fail_for_memory(h: Harness, name: str, times: int) -> None:
    await h.launched(name, times)
    h.launcher.children[name].crash(1, OutOfMemory("CUDA0", 9 * G, 3 * G).format())


async def test_a_load_out_of_memory_evicts_the_idle_models_there_and_is_tried_once_more() -> None:
    sizes = {"a": 10 * G, "b": 5 * G, "c": 5 * G}  # b is estimated well below what it needs
    cuda0, cuda1 = pinned("CUDA0"), pinned("CUDA1")
    async with harness(0, names="abc", devices=planner(sizes), a=cuda0, b=cuda1, c=cuda0) as h:
        a = await h.load("a", on("CUDA0", 10 * G))
        b = await h.load("b", on("CUDA1", 5 * G))
        async with anyio.create_task_group() as group:
            group.start_soon(h.request, "c")
            await _fail_for_memory(h, "c", 1)
            await h.until(lambda: a.stop_requested)
            assert not b.stop_requested  # idle too, but on the other GPU
            h.advance(1.0)  # past the retry backoff
            await h.launched("c", 2)
            h.launcher.children["c"].ready(on("CUDA0", 9 * G))
        assert h.state("c").status is Status.LOADED
        assert (a.status, b.status) == (Status.UNLOADED, Status.LOADED)


async def test_a_second_failure_for_memory_is_the_answer_naming_device_need_and_free() -> None:
    async with harness(0, names="a", devices=planner({"a": 5 * G})) as h:
        failure: list[OutOfDeviceMemory] = []

        async def request() -> None:
            with pytest.raises(OutOfDeviceMemory) as caught:
                await h.request("a")
            failure.append(caught.value)

        async with anyio.create_task_group() as group:
            group.start_soon(request)
            await _fail_for_memory(h, "a", 1)
            await h.until(lambda: h.state("a").failures == 1)
            h.advance(1.0)
            await _fail_for_memory(h, "a", 2)
        assert h.launcher.launched == ["a", "a"]  # tried once more, then no crash loop
        error = api_error(failure[0])
        assert error.status == 503
        assert error.message == (
            "model 'a' does not fit on CUDA0: it needs 9216 MiB, 3072 MiB are free"
        )


async def test_with_default_settings_the_first_model_leaves_room_for_the_second() -> None:
    # Each 20 GiB at its trained context, 6 GiB at --fit-ctx; one 24 GiB GPU, two models kept.
    def estimate(entry: CatalogueEntry, ctx: int | None) -> int:
        return 20 * G if ctx is None else 6 * G

    inventory = FakeDevices([Device("CUDA0", 24 * G, 24 * G)])
    planner = DevicePlanner(inventory, most_resident=2, estimate=estimate)
    async with harness(2, names="ab", devices=planner) as h:
        await h.load("a", on("CUDA0", 11 * G))  # its fit shrank the context to its share
        args = h.state("a").args
        first = int(args[args.index("--fit-target") + 1])
        assert (24 * G) - first * (1 << 20) <= 24 * G - 1024 * (1 << 20) - 6 * G
        b = await h.load("b", on("CUDA0", 11 * G))
        assert (h.state("a").status, b.status) == (Status.LOADED, Status.LOADED)
        assert h.scheduler.evictions == 0
