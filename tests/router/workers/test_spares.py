"""Spare workers: handed the next load, replaced after its first answer, never a model
(router.workers.spares).

Order, not time: the fake launcher's children say when they are warm, loaded or dead.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from corral.children.worker_key import WORKER_KEY_ENV
from router.availability.errors import LoadFailed
from router.capacity.memory_budget import SPARE_WORKER_BYTES, MemoryBudget
from router.catalogue.catalogue import CatalogueEntry
from router.scheduling.leases import Lease
from router.workers.model_state import ModelFields, ModelState, Status
from router.workers.spares import SPARE_ARGV
from tests.support.fakes.fake_launcher import FakeChild
from tests.support.scheduling_harness import Harness, harness

pytestmark = pytest.mark.anyio


async def _settled(condition: Callable[[], bool]) -> None:
    """Let every task run until it waits on something the test has yet to do."""
    with anyio.fail_after(5):
        while not condition():
            await anyio.wait_all_tasks_blocked()
            if not condition():
                await anyio.lowlevel.checkpoint()


async def _warm_spare(h: Harness, name: str) -> FakeChild:
    await h.launched(name)
    spare = h.launcher.children[name]
    spare.warm()
    await _settled(lambda: h.spares.ready == 1)
    return spare


async def test_a_load_takes_the_warm_spare_and_a_new_one_starts_once_it_answered() -> None:
    async with harness(models_max=1, spares=1) as h:
        h.spares.fill()
        spare = await _warm_spare(h, "spare1")
        async with anyio.create_task_group() as group:
            group.start_soon(h.request, "a")
            await _settled(lambda: bool(spare.loads))
            [flags] = spare.loads
            assert flags == h.state("a").args[len(SPARE_ARGV) - 1 :]  # without `python -m worker`
            assert flags[:4] == ["--model", "/models/a.gguf", "--alias", "a"]
            # The worker key a new process would get in its environment comes in the load
            # command; the spare was started without one (docs/protocol.md §8).
            [key] = spare.load_keys
            assert len(key) >= 43
            assert WORKER_KEY_ENV not in h.launcher.environments["spare1"]
            await anyio.wait_all_tasks_blocked()
            assert h.launcher.launched == ["spare1"]  # neither a new process for a, nor a spare
            spare.ready()
        await h.launched("spare2")
        assert h.state("a").status is Status.LOADED
        process = h.state("a").process
        assert process is not None
        assert process.pid == spare.pid
        assert h.launcher.launched == ["spare1", "spare2"]
        assert list(h.pool.models) == list("abcd")  # a spare is never a model


async def test_the_replacement_waits_for_the_first_answer_not_the_load() -> None:
    # Its start-up would compete with the first prompt's processing on the same cores.
    async with harness(models_max=1, spares=1) as h:
        h.spares.fill()
        spare = await _warm_spare(h, "spare1")
        acquired: list[Lease] = []

        async def acquire() -> None:
            acquired.append(await h.scheduler.acquire("a", {}))

        async with anyio.create_task_group() as group:
            group.start_soon(acquire)
            await _settled(lambda: bool(spare.loads))
            spare.ready()
        [lease] = acquired  # loaded and handed to its request, which has no answer yet
        state = lease.state
        await anyio.wait_all_tasks_blocked()
        assert h.launcher.launched == ["spare1"]
        h.scheduler.note_progress(state)  # the answer's first bytes
        await h.launched("spare2")
        h.scheduler.note_progress(state)  # later bytes start nothing more
        lease.release()
        await anyio.wait_all_tasks_blocked()
        assert h.launcher.launched == ["spare1", "spare2"]


async def test_without_a_warm_spare_a_load_starts_its_own_worker() -> None:
    async with harness(models_max=0, spares=1) as h:
        h.spares.fill()
        await h.launched("spare1")  # still importing
        await h.load("a")
        assert h.launcher.launched == ["spare1", "a"]
        assert h.launcher.children["spare1"].loads == []


async def test_no_spare_with_zero() -> None:
    async with harness(models_max=0, spares=0) as h:
        h.spares.fill()
        await h.load("a")
        await anyio.wait_all_tasks_blocked()
        assert h.launcher.launched == ["a"]


async def _load_through(h: Harness, spare: FakeChild, name: str) -> None:
    """A request for ``name``, served by the worker ``spare`` becomes."""
    async with anyio.create_task_group() as group:
        group.start_soon(h.request, name)
        await _settled(lambda: bool(spare.loads))
        spare.ready()


async def test_spares_never_count_as_models_nor_delay_an_eviction() -> None:
    async with harness(models_max=1, spares=1) as h:
        h.spares.fill()
        first = await _warm_spare(h, "spare1")
        await _load_through(h, first, "a")
        second = await _warm_spare(h, "spare2")
        async with anyio.create_task_group() as group:
            group.start_soon(h.request, "b")  # one model at most: a goes, b takes the spare
            await _settled(lambda: bool(second.loads))
            # A spare is warm already: a's worker exits rather than being released.
            assert first.received == ["load command", "exit command"]
            assert h.state("a").status is Status.UNLOADED
            second.ready()
        assert [flags[3] for flags in second.loads] == ["b"]
        assert [s.name for s in h.pool.models.values() if s.running] == ["b"]


async def test_a_spare_that_dies_is_replaced_and_loads_go_on() -> None:
    async with harness(models_max=0, spares=1) as h:
        h.spares.fill()
        dead = await _warm_spare(h, "spare1")
        dead.crash(-9)
        await h.launched("spare2")
        await h.load("a")  # the new spare is not warm yet: a starts its own worker
        assert h.launcher.launched == ["spare1", "spare2", "a"]
        replacement = h.launcher.children["spare2"]
        replacement.warm()
        await _load_through(h, replacement, "b")
        assert h.state("b").status is Status.LOADED
        assert dead.loads == []


async def test_a_handed_over_worker_that_fails_is_the_model_failing() -> None:
    async with harness(models_max=0, spares=1) as h:
        h.spares.fill()
        spare = await _warm_spare(h, "spare1")

        async def load() -> None:
            with pytest.raises(LoadFailed):
                await h.scheduler.acquire("a", {})

        async with anyio.create_task_group() as group:
            group.start_soon(load)
            await _settled(lambda: bool(spare.loads))
            spare.crash(1, "failed to load model")
        assert h.state("a").failed
        assert "failed to load model" in str(h.state("a").error)
        await h.launched("spare2")  # and the spare it was is replaced


async def test_spares_that_never_warm_up_stop_being_started() -> None:
    async with harness(models_max=0, spares=1) as h:
        h.spares.fill()
        for attempt in (1, 2, 3):
            await h.launched(f"spare{attempt}")
            h.launcher.children[f"spare{attempt}"].crash(1, "ImportError")
        await _settled(lambda: h.spares.ready == 0)
        await anyio.wait_all_tasks_blocked()
        assert h.launcher.launched == ["spare1", "spare2", "spare3"]


async def test_the_router_stopping_kills_its_spares() -> None:
    async with harness(models_max=0, spares=2) as h:
        h.spares.fill()
        await h.launched("spare2")
        h.spares.close()
        await anyio.wait_all_tasks_blocked()
        assert [c.received for c in h.launcher.children.values()] == [["SIGKILL"]] * 2


def _loaded(path: Path) -> ModelState:
    return ModelState(ModelFields(CatalogueEntry("m", path, "models_dir"), [], Status.LOADED))


def test_spares_count_in_the_memory_budget_at_their_measured_size(tmp_path: Path) -> None:
    held = 300 << 20
    running = _loaded(tmp_path / "m.gguf")
    coming = ModelState.unloaded(
        CatalogueEntry("n", tmp_path / "n.gguf", "models_dir", memory=held)
    )
    spares = [SPARE_WORKER_BYTES, SPARE_WORKER_BYTES]
    budget = MemoryBudget(
        2 * held + SPARE_WORKER_BYTES, measure=lambda state: held, spares=lambda: spares
    )
    # The coming model takes one spare (its memory becomes the model's); the other one counts.
    assert budget.fits([running], [coming])
    spares.append(SPARE_WORKER_BYTES)
    assert not budget.fits([running], [coming])
    # One more spare is started only where it fits next to what runs and the other spares.
    assert budget.spare_fits([running], held)
    assert not budget.spare_fits([running], held + 1)


async def test_no_spare_starts_where_the_memory_budget_has_no_room_for_it() -> None:
    budget = MemoryBudget(SPARE_WORKER_BYTES - 1, measure=lambda state: 0)
    async with harness(models_max=0, spares=1, memory=budget) as h:
        h.spares.fill()
        await anyio.wait_all_tasks_blocked()
        assert h.launcher.launched == []


async def _serving_a_from_a_spare(h: Harness) -> FakeChild:
    """Model a served by spare1, whose answer has started spare2 (still importing)."""
    h.spares.fill()
    first = await _warm_spare(h, "spare1")
    await _load_through(h, first, "a")
    await h.launched("spare2")
    return first


async def test_an_evicted_worker_that_began_as_a_spare_is_released_for_the_next_load() -> None:
    async with harness(models_max=1, spares=1) as h:
        first = await _serving_a_from_a_spare(h)
        async with anyio.create_task_group() as group:
            group.start_soon(h.request, "b")  # one model at most: a goes
            await _settled(lambda: "release command" in first.received)
            assert first.received == ["load command", "release command"]
            assert h.state("b").status is Status.UNLOADED  # a has not released its model yet
            first.warm()  # released: a spare again
            await _settled(lambda: len(first.loads) == 2)
            first.ready()
        assert h.state("a").status is Status.UNLOADED
        assert not h.state("a").failed
        assert [flags[3] for flags in first.loads] == ["a", "b"]
        assert h.launcher.launched == ["spare1", "spare2"]  # no process started for b
        process = h.state("b").process
        assert process is not None
        assert process.pid == first.pid


async def test_a_spare_that_warms_up_beside_a_released_worker_is_one_too_many() -> None:
    async with harness(models_max=1, spares=1) as h:
        first = await _serving_a_from_a_spare(h)
        async with anyio.create_task_group() as group:
            group.start_soon(h.pool.stop, h.state("a"))  # an unload: nothing loads next
            await _settled(lambda: "release command" in first.received)
            first.warm()
        assert h.spares.ready == 1
        second = h.launcher.children["spare2"]
        second.warm()
        # The fresh one is kept: a released worker's heap has grown with its model's use.
        await _settled(lambda: "exit command" in first.received)
        assert first.received == ["load command", "release command", "exit command"]
        assert second.received == []
        assert h.spares.ready == 1


async def test_a_worker_that_dies_while_releasing_is_replaced() -> None:
    async with harness(models_max=0, spares=1) as h:
        first = await _serving_a_from_a_spare(h)
        h.launcher.children["spare2"].crash(1)  # no spare warm: a's worker is wanted back
        await h.launched("spare3")
        async with anyio.create_task_group() as group:
            group.start_soon(h.pool.stop, h.state("a"))
            await _settled(lambda: "release command" in first.received)
            first.crash(-9)
        assert h.state("a").status is Status.UNLOADED
        h.launcher.children["spare3"].warm()
        await _settled(lambda: h.spares.ready == 1)
        await anyio.wait_all_tasks_blocked()
        assert h.launcher.launched == ["spare1", "spare2", "spare3"]


async def test_a_worker_from_a_spare_takes_threads_commands_until_it_is_released() -> None:
    async with harness(models_max=1, spares=1) as h:
        first = await _serving_a_from_a_spare(h)
        process = h.state("a").process
        assert process is not None
        await process.send_threads(1, 1)  # its model's share (router/scheduling/cores.py)
        assert first.received == ["load command", "threads command 1 1"]
        async with anyio.create_task_group() as group:
            group.start_soon(h.request, "b")  # one model at most: a goes
            await _settled(lambda: "release command" in first.received)
            await process.send_threads(2, 2)  # a's share, late: the spare has no context
            assert first.received[-1] == "release command"
            first.warm()
            await _settled(lambda: len(first.loads) == 2)
            first.ready()
