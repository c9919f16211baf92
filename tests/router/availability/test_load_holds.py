"""Models held while a removal deletes their files: no worker starts for them, and nobody else
waits behind them (docs/protocol.md §4)."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from router.availability.errors import LoadsHeld
from router.workers.model_state import ModelState
from tests.support.scheduling_harness import harness

pytestmark = pytest.mark.anyio


async def test_a_held_model_waits_for_its_hold_and_never_starts_meanwhile() -> None:
    async with harness(models_max=0) as h, anyio.create_task_group() as group:
        served: list[ModelState] = []

        async def request() -> None:
            served.append(await h.request("a"))

        with h.pool.holds.holding(["a"]):
            group.start_soon(request)
            await h.until(lambda: h.scheduler.queue_depth == 1)
            await h.load("b")  # the queue behind a held model moves on
            with pytest.raises(LoadsHeld):
                await h.scheduler.load_now("a")
            with pytest.raises(LoadsHeld):
                h.pool.start(h.state("a"))
            for _ in range(10):
                await anyio.lowlevel.checkpoint()
            assert h.launcher.launched == ["b"]
        await h.launched("a")  # the hold's end wakes the waiting request
        h.launcher.children["a"].ready()
        await h.until(lambda: len(served) == 1)


async def test_holds_of_one_model_add_up() -> None:
    async with harness(models_max=0) as h:
        with h.pool.holds.holding(["a"]):
            with h.pool.holds.holding(["a", "b"]):
                assert h.pool.holds.held("a")
                assert h.pool.holds.held("b")
            assert h.pool.holds.held("a")
            assert not h.pool.holds.held("b")
        assert not h.pool.holds.held("a")
