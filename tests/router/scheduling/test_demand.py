"""Keeping a model its users are about to come back to (docs/serving.md, "Scheduling",
*Expected return*), on the scheduling harness: a batch request under the bound does not evict
a model with recent interactive demand, and loads once that demand stops or it ages; victims
go by expected return, not only by last use; a batch load serves its backlog for a quantum
before an interactive request swaps it out."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from router.scheduling.demand import BATCH_QUANTUM_S, RETURN_S
from router.scheduling.leases import Lease
from router.scheduling.waiting_line import Caller, Priority
from router.workers.model_state import ModelState, Status
from tests.support.scheduling_harness import Harness, harness

pytestmark = pytest.mark.anyio

ALICE = Caller(Priority.INTERACTIVE, "a11ce000")
BOB = Caller(Priority.INTERACTIVE, "b0b00000")
BATCH = Caller(Priority.BATCH, "ba7c4000")
ONE_SLOT = {"options": (("parallel", "1"),)}


async def _served(h: Harness, name: str, caller: Caller) -> ModelState:
    """One request of ``caller`` to ``name``, answered (loading the model if it must)."""
    with anyio.fail_after(5):  # a rule that breaks fails the test, never hangs it
        lease = await h.scheduler.acquire(name, {}, caller)
    h.order.append(name)
    lease.release()
    return lease.state


async def _load(h: Harness, name: str, caller: Caller) -> ModelState:
    served = len(h.order)
    async with anyio.create_task_group() as group:
        group.start_soon(_served, h, name, caller)
        await h.launched(name, times=h.launcher.launched.count(name) + 1)
        h.launcher.children[name].ready()
        await h.until(lambda: len(h.order) > served)
    return h.state(name)


async def _loads_and_serves(h: Harness, name: str) -> None:
    """The queued request for ``name`` has its model launched; it loads and serves it."""
    await h.launched(name)
    h.launcher.children[name].ready()
    await h.until(lambda: h.order[-1] == name)


async def _room_for_c(h: Harness, kept: ModelState, evicted: ModelState) -> None:
    """Alice asks for c: ``evicted`` makes its room, ``kept`` stays."""
    async with anyio.create_task_group() as group:
        group.start_soon(_served, h, "c", ALICE)
        await h.launched("c")
        assert evicted.stop_requested
        assert not kept.stop_requested
        await _loads_and_serves(h, "c")


async def _queued(h: Harness, depth: int) -> None:
    await h.until(lambda: h.scheduler.queue_depth == depth)
    await anyio.wait_all_tasks_blocked()


async def test_batch_does_not_evict_a_model_its_user_is_about_to_come_back_to() -> None:
    async with harness(models_max=1, wait_max=30.0) as h, anyio.create_task_group() as group:
        a = await _load(h, "a", ALICE)  # alice read her answer: a is idle, and she thinks
        group.start_soon(_served, h, "b", BATCH)
        await _queued(h, 1)
        assert h.launcher.launched == ["a"]
        assert not a.stop_requested
        h.advance(RETURN_S / 2)
        await _served(h, "a", ALICE)  # she came back: no swap and back for her
        h.advance(RETURN_S / 2)
        await anyio.wait_all_tasks_blocked()
        assert h.launcher.launched == ["a"]
        h.advance(RETURN_S / 2)  # she has not come back for RETURN_S: batch may have the room
        await _loads_and_serves(h, "b")


async def test_batch_still_loads_at_the_bound_however_busy_the_users() -> None:
    async with harness(models_max=1, wait_max=20.0) as h, anyio.create_task_group() as group:
        await _load(h, "a", ALICE)
        group.start_soon(_served, h, "b", BATCH)
        await _queued(h, 1)
        for _ in range(3):  # alice keeps coming back every 5 s
            h.advance(5.0)
            await _served(h, "a", ALICE)
        assert h.launcher.launched == ["a"]
        h.advance(5.0)  # b has waited 20 s, the bound
        await _loads_and_serves(h, "b")


async def test_the_victim_is_the_model_least_expected_back_not_the_least_recently_used() -> None:
    async with harness(models_max=2) as h:
        a = await _load(h, "a", ALICE)
        b = await _load(h, "b", BATCH)
        h.used_at(a, 1000.0)  # a was used before b: least recently used, but alice is back soon
        h.used_at(b, 1001.0)
        await _room_for_c(h, kept=a, evicted=b)


async def test_a_batch_load_serves_its_backlog_for_a_quantum() -> None:
    async with harness(models_max=1) as h, anyio.create_task_group() as group:
        await _load(h, "a", BATCH)  # loaded for batch's backlog
        group.start_soon(_served, h, "b", ALICE)
        await _queued(h, 1)
        steps = int(BATCH_QUANTUM_S / 0.5) - 1
        for _ in range(steps):  # the backlog keeps coming, back to back
            h.advance(0.5)
            lease: Lease | None = h.scheduler.acquire_if_ready("a", {}, BATCH)
            assert lease is not None
            lease.release()
            await anyio.wait_all_tasks_blocked()
            assert h.launcher.launched == ["a"]
        h.advance(0.5)  # the quantum is over: alice's request swaps a out
        await _loads_and_serves(h, "b")


async def test_a_batch_quantum_ends_when_its_backlog_does() -> None:
    async with harness(models_max=1) as h, anyio.create_task_group() as group:
        await _load(h, "a", BATCH)
        group.start_soon(_served, h, "b", ALICE)
        await _queued(h, 1)
        await anyio.lowlevel.checkpoint()
        assert h.launcher.launched == ["a"]
        h.advance(1.0)  # no batch request for a second: its backlog is done
        await _loads_and_serves(h, "b")


async def test_a_persons_turn_on_a_batch_load_ends_its_quantum() -> None:
    # Issue 51's thrash trace: batch's model is also a person's. Bob's turn on a, loaded for
    # batch, makes it his model too: alice's request for b waits for a batch answer, not for
    # the rest of a quantum that only batch's own loads earn.
    async with harness(models_max=1) as h, anyio.create_task_group() as group:
        a = await _load(h, "a", BATCH)
        group.start_soon(_served, h, "b", ALICE)
        await _queued(h, 1)
        h.advance(0.5)  # the backlog keeps coming, and bob asks a between its requests
        batch = h.scheduler.acquire_if_ready("a", {}, BATCH)
        bob = h.scheduler.acquire_if_ready("a", {}, BOB)
        assert batch is not None
        assert bob is not None
        bob.release()
        await anyio.wait_all_tasks_blocked()
        assert h.launcher.launched == ["a"]  # busy with batch's request: never evicted
        batch.release()  # a is idle, well within what would have been batch's quantum
        await _loads_and_serves(h, "b")
        assert a.stop_requested


async def test_a_busy_batch_model_goes_before_an_idle_one_a_user_comes_back_to() -> None:
    async with harness(models_max=2) as h, anyio.create_task_group() as group:
        a = await _load(h, "a", ALICE)  # alice's model, idle while she reads
        b = await _load(h, "b", BATCH)
        h.advance(BATCH_QUANTUM_S)  # b's quantum is over, and it is busy with its backlog
        running = h.scheduler.acquire_if_ready("b", {}, BATCH)
        assert running is not None
        group.start_soon(_served, h, "c", ALICE)  # room for c: not alice's a, but b
        await _queued(h, 1)
        assert not a.stop_requested
        assert h.scheduler.acquire_if_ready("b", {}, BATCH) is None  # b takes no more batch
        group.start_soon(_served, h, "b", BATCH)
        await _queued(h, 2)
        view = h.scheduler.queue_view(b)
        assert view is not None
        assert view.reason == "yielding"
        running.release()  # its last batch request ends: b goes, c loads
        await h.launched("c")
        assert b.stop_requested
        assert not a.stop_requested
        h.launcher.children["c"].ready()
        await h.until(lambda: h.order[-1] == "c")
        group.cancel_scope.cancel()  # b's batch request waits for its next load, ageing


async def test_a_burst_waiting_on_a_model_that_yields_waits_for_its_next_load() -> None:
    # Issue 51: three models, room for two, a burst of batch requests waiting for c's one slot
    # while alice and bob take turns on a and b. c yields for alice's a, and when its last
    # request ends it is stopped with the burst still waiting: those requests go back in line,
    # their age kept, and are served when c loads again (they were answered "stopped before it
    # finished loading", for a load they had seen finish).
    async with harness(models_max=2, c=ONE_SLOT) as h, anyio.create_task_group() as group:
        a = await _load(h, "a", ALICE)
        b = await _load(h, "b", BOB)
        h.used_at(a, h.clock.now)  # a is the older: c's room is a's
        h.used_at(b, h.clock.now + 1.0)
        h.advance(RETURN_S)  # neither person has been back: batch may have the room
        leases: list[Lease] = []

        async def batch(tag: int) -> None:
            leases.append(await h.scheduler.acquire("c", {}, BATCH))
            h.order.append(f"c{tag}")

        for tag in range(4):
            group.start_soon(batch, tag)
            await _queued(h, tag + 1)
        joined = h.clock.now
        await h.launched("c")
        assert a.stop_requested
        h.launcher.children["c"].ready()
        await h.until(lambda: h.order[-1] == "c0")  # c's one slot is taken, three wait for it
        await _served(h, "b", BOB)  # bob is back on b
        h.advance(BATCH_QUANTUM_S)  # c's quantum is over
        group.start_soon(_served, h, "a", ALICE)  # alice is back: c, only batch's, yields
        await _queued(h, 4)
        assert h.scheduler.queue_view(h.state("c")).reason == "yielding"  # type: ignore[union-attr]
        leases.pop().release()  # c's last request ends, and c goes for a
        await h.launched("a", times=2)
        assert h.state("c").stop_requested
        h.launcher.children["a"].ready()
        await h.until(lambda: h.order[-1] == "a")
        await h.until(lambda: h.state("c").status is Status.UNLOADED)
        view = h.scheduler.queue_view(h.state("c"))
        assert view is not None
        assert view.waiting == 3  # none was failed
        assert view.oldest_seconds == h.clock.now - joined  # their age is kept

        h.advance(RETURN_S)  # neither person is back: c loads again for its burst
        await h.launched("c", times=2)
        h.launcher.children["c"].ready()
        for name in ("c1", "c2", "c3"):  # in the order they came
            await h.until(lambda name=name: h.order[-1] == name)  # type: ignore[misc]
            leases.pop().release()
        assert h.scheduler.queue_depth == 0


async def test_a_batch_backlog_past_the_bound_keeps_its_model() -> None:
    # A model yields its place to a person only for batch under the bound: a backlog that has
    # waited it goes first, so its model would be stopped only to be loaded straight back.
    async with (
        harness(models_max=2, wait_max=10.0, b=ONE_SLOT) as h,
        anyio.create_task_group() as group,
    ):
        a = await _load(h, "a", ALICE)
        b = await _load(h, "b", BATCH)
        running = h.scheduler.acquire_if_ready("b", {}, BATCH)
        assert running is not None
        group.start_soon(_served, h, "b", BATCH)  # waits for b's one slot
        await _queued(h, 1)
        h.advance(10.0)  # it has waited the bound; b's quantum is over
        group.start_soon(_served, h, "c", ALICE)
        await h.launched("c")  # alice's own a makes the room, not b
        assert a.stop_requested
        assert not b.stop_requested
        view = h.scheduler.queue_view(b)
        assert view is not None
        assert view.reason == "busy"
        h.launcher.children["c"].ready()
        await h.until(lambda: h.order[-1] == "c")
        running.release()
        await h.until(lambda: h.order[-1] == "b")


async def test_the_model_more_people_come_back_to_stays() -> None:
    carol = Caller(Priority.INTERACTIVE, "ca401000")
    bob = BOB
    async with harness(models_max=2) as h:
        a = await _load(h, "a", ALICE)
        await _served(h, "a", bob)  # two people on a
        b = await _load(h, "b", carol)
        for _ in range(3):  # one on b, asking more often
            await _served(h, "b", carol)
        h.used_at(b, 1001.0)
        h.used_at(a, 1000.0)
        await _room_for_c(h, kept=a, evicted=b)


# --schedule-keep-idle (issue 51, item 1): the box does not stay idle for a person who thinks.
KEEP_IDLE = 4.0


@pytest.mark.parametrize("keep_idle", [KEEP_IDLE, 2 * RETURN_S])
async def test_an_idle_persons_model_is_kept_from_batch_for_keep_idle_then_given_up(
    keep_idle: float,
) -> None:
    async with (
        harness(models_max=1, keep_idle=keep_idle, wait_max=120.0) as h,
        anyio.create_task_group() as group,
    ):
        a = await _load(h, "a", ALICE)
        lease = await h.scheduler.acquire("a", {}, ALICE)  # a long answer: idle only once it ends
        group.start_soon(_served, h, "b", BATCH)
        await _queued(h, 1)
        h.advance(10.0)
        lease.release()
        await anyio.wait_all_tasks_blocked()
        h.advance(keep_idle - 0.1)  # she has been idle a little less than the knob: kept
        await anyio.wait_all_tasks_blocked()
        assert h.launcher.launched == ["a"]
        assert not a.stop_requested
        h.advance(0.1)  # idle for the knob's time: batch has the room
        await _loads_and_serves(h, "b")
        assert a.stop_requested


async def test_keep_idle_0_gives_an_idle_persons_model_to_batch_at_once() -> None:
    async with harness(models_max=1, keep_idle=0.0) as h:
        a = await _load(h, "a", ALICE)
        await _load(h, "b", BATCH)
        assert a.stop_requested


async def test_a_person_back_goes_ahead_of_the_batch_that_took_their_model() -> None:
    async with harness(models_max=1, keep_idle=KEEP_IDLE) as h, anyio.create_task_group() as group:
        await _load(h, "a", ALICE)
        h.advance(KEEP_IDLE)
        b = await _load(h, "b", BATCH)  # her model given up to batch's backlog
        h.advance(0.5)
        lease = h.scheduler.acquire_if_ready("b", {}, BATCH)  # the backlog keeps coming
        assert lease is not None
        lease.release()
        assert h.scheduler.demand.quantum_left(b) > 0
        group.start_soon(_served, h, "a", ALICE)  # she is back: no batch quantum holds b
        await h.launched("a", times=2)
        assert b.stop_requested
        h.launcher.children["a"].ready()
        await h.until(lambda: h.order[-1] == "a")
        assert h.scheduler.acquire_if_ready("b", {}, BATCH) is None  # batch waits its turn


async def test_with_fifo_keep_idle_changes_nothing() -> None:
    async with harness(models_max=1, schedule="fifo", keep_idle=60.0) as h:
        a = await _load(h, "a", ALICE)
        await _load(h, "b", BATCH)  # llama.cpp's router's order: the least recently used goes
        assert a.stop_requested
