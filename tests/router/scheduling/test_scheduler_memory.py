"""Scheduling rules under Corral's memory budget (``--models-memory-max``, docs/operations.md).

Driven through the fake launcher like tests/router/scheduling/test_scheduler.py; sizes are declared
with
the preset ``memory`` key, or measured by a stand-in for the worker's resident memory.
"""

from __future__ import annotations

import anyio
import pytest

from router.capacity.memory_budget import MemoryBudget
from router.workers.model_state import ModelState, Status
from tests.support.scheduling_harness import harness

pytestmark = pytest.mark.anyio

G = 1 << 30


async def test_memory_budget_evicts_the_least_recent_idle_models_until_one_fits() -> None:
    budget = MemoryBudget(10 * G)
    async with harness(
        0, memory=budget, a={"memory": 4 * G}, b={"memory": 4 * G}, c={"memory": 4 * G}
    ) as h:
        a, b = await h.load("a"), await h.load("b")
        h.used_at(a, 1.0)
        h.used_at(b, 2.0)
        c = await h.load("c")  # 4 + 4 + 4 > 10: one must go, and a is the least recent
        assert (a.status, b.status, c.status) == (Status.UNLOADED, Status.LOADED, Status.LOADED)
        assert h.scheduler.evictions == 1


async def test_a_model_over_the_budget_still_loads_alone() -> None:
    budget = MemoryBudget(10 * G)
    async with harness(0, memory=budget, a={"memory": 2 * G}, d={"memory": 20 * G}) as h:
        a = await h.load("a")
        d = await h.load("d")
        assert (a.status, d.status) == (Status.UNLOADED, Status.LOADED)


async def test_a_busy_model_is_never_evicted_to_free_memory() -> None:
    budget = MemoryBudget(10 * G)
    async with harness(0, memory=budget, a={"memory": 6 * G}, b={"memory": 6 * G}) as h:
        a = await h.load("a")
        h.busy(a)
        async with anyio.create_task_group() as group:
            group.start_soon(h.request, "b")
            await h.until(lambda: h.scheduler.queue_depth == 1)
            h.scheduler.tick()
            assert not a.stop_requested
            assert h.launcher.launched == ["a"]
            view = h.scheduler.queue_view(h.state("b"))
            assert view is not None
            assert view.reason == "memory"  # the budget is full, not --models-max (off here)
            h.done(a)  # a goes idle: now it may make room
            await h.launched("b")
            h.launcher.children["b"].ready()
        assert a.status is Status.UNLOADED


async def test_the_most_a_model_was_seen_to_hold_is_what_it_needs_next_time() -> None:
    measured = {"a": 6 * G, "b": 3 * G, "c": 3 * G}  # files of 0 bytes: only measuring tells

    def resident(state: ModelState) -> int | None:
        return measured[state.entry.name] if state.running else None

    async with harness(0, memory=MemoryBudget(10 * G, resident)) as h:
        a = await h.load("a")  # measured as its request ends
        await h.pool.stop(a)
        b, c = await h.load("b"), await h.load("c")  # 3 + 3: fits, nothing evicted
        h.used_at(b, 1.0)
        h.used_at(c, 2.0)
        assert h.scheduler.evictions == 0
        async with anyio.create_task_group() as group:
            group.start_soon(h.request, "a")  # 3 + 3 + 6 (learned) > 10: b must make room
            await h.launched("a", times=2)
            h.launcher.children["a"].ready()
        assert (b.status, c.status) == (Status.UNLOADED, Status.LOADED)
        assert a.peak_memory == 6 * G


async def test_explicit_load_evicts_until_the_model_fits() -> None:
    budget = MemoryBudget(10 * G)
    async with harness(
        0, memory=budget, a={"memory": 4 * G}, b={"memory": 4 * G}, c={"memory": 8 * G}
    ) as h:
        a, b = await h.load("a"), await h.load("b")
        async with anyio.create_task_group() as group:
            group.start_soon(h.scheduler.load_now, "c")
            await h.launched("c")
        assert (a.status, b.status) == (Status.UNLOADED, Status.UNLOADED)
        assert h.scheduler.evictions == 2
