"""The swap-aware order (docs/serving.md, "Scheduling"), one test per rule, on the scheduling
harness: a loaded model's requests go before a swap, up to the bound; a fresh model's minimum
residency; interactive before batch and keys in turns for a model's slots, a person's model's
last slot kept from batch, sharing by tokens
(two busy keys within the bound, a key back from away with no credit); batch ages; cold loads
queued under ``--models-max 1`` are all served; ``--schedule fifo`` keeps upstream's order.
"""

from __future__ import annotations

from collections import Counter

import anyio
import anyio.lowlevel
import pytest
from anyio.abc import TaskGroup

from router.scheduling.demand import RETURN_S
from router.scheduling.leases import Lease
from router.scheduling.waiting_line import Caller, Priority, weighted_tokens
from router.workers.model_state import Status
from tests.support.scheduling_harness import Harness, harness

pytestmark = pytest.mark.anyio

ONE_SLOT = {"options": (("parallel", "1"),)}
ALICE = Caller(Priority.INTERACTIVE, "a11ce000")
BOB = Caller(Priority.INTERACTIVE, "b0b00000")
BATCH = Caller(Priority.BATCH, "ba7c4000")
# A key sending long answers and one sending short ones: prompt tokens computed, generated.
HEAVY, LIGHT = Caller(Priority.INTERACTIVE, "4ea7y000"), Caller(Priority.INTERACTIVE, "11647000")
COSTS = {HEAVY: (32, 256), LIGHT: (32, 16)}
MOST = weighted_tokens(*COSTS[HEAVY])  # the most one request costs


async def _take(h: Harness, name: str, caller: Caller, leases: list[Lease], tag: str) -> None:
    leases.append(await h.scheduler.acquire(name, {}, caller))
    h.order.append(tag)


def _why(h: Harness, name: str) -> str | None:
    view = h.scheduler.queue_view(h.state(name))
    return None if view is None else view.reason


async def _queued(h: Harness, depth: int) -> None:
    await h.until(lambda: h.scheduler.queue_depth == depth)
    await anyio.lowlevel.checkpoint()


async def test_a_loaded_models_requests_go_before_a_swap_until_the_bound() -> None:
    async with harness(models_max=1, wait_max=30.0) as h, anyio.create_task_group() as group:
        a = await h.load("a")
        held = await h.scheduler.acquire("a", {}, ALICE)
        group.start_soon(h.request, "b")  # wants a's place, which is busy
        await _queued(h, 1)
        # Under the bound, a newcomer for the loaded model is served: no swap for it.
        second = h.scheduler.acquire_if_ready("a", {}, ALICE)
        assert second is not None
        second.release()
        assert _why(h, "b") == "models-max"  # the count is what is full, not memory

        h.advance(30.0)  # b's request has waited the bound: a takes nobody new, and drains
        assert h.scheduler.acquire_if_ready("a", {}, ALICE) is None
        assert h.scheduler.queue_view(a) is None  # that newcomer did not wait: it was refused
        assert not a.stop_requested  # still busy with the request it had
        held.release()
        await h.launched("b")
        assert h.state("a").status is Status.UNLOADED
        h.launcher.children["b"].ready()


async def test_a_fresh_model_stays_its_minimum_residency() -> None:
    async with harness(models_max=1, a={"min_residency": 5.0}) as h, anyio.create_task_group() as g:
        a = await h.load("a")  # served and idle, but loaded just now
        g.start_soon(h.request, "b")
        await _queued(h, 1)
        await anyio.wait_all_tasks_blocked()
        assert h.launcher.launched == ["a"]
        assert not a.stop_requested
        h.advance(5.0)
        await h.launched("b")
        h.launcher.children["b"].ready()


async def test_interactive_goes_before_batch_for_a_models_slots() -> None:
    async with harness(models_max=1, a=ONE_SLOT) as h, anyio.create_task_group() as group:
        await h.load("a")
        leases: list[Lease] = []
        await _take(h, "a", ALICE, leases, "first")
        group.start_soon(_take, h, "a", BATCH, leases, "batch")
        await _queued(h, 1)
        group.start_soon(_take, h, "a", BOB, leases, "interactive")
        await _queued(h, 2)
        assert _why(h, "a") == "busy"
        leases[0].release()
        await h.until(lambda: len(h.order) == 2)
        assert h.order == ["first", "interactive"]
        leases[1].release()
        await h.until(lambda: len(h.order) == 3)
        assert h.order == ["first", "interactive", "batch"]


async def test_batch_leaves_a_persons_model_its_last_slot() -> None:
    # Issue 51's thrash trace: two people grouped on one load of a two-slot model, and a batch
    # job on it. Batch takes the second slot only once alice's request has ended, so bob's turn
    # finds it free rather than waiting for a batch answer.
    async with harness(models_max=1, a={"options": (("parallel", "2"),)}) as h:
        await h.load("a")
        leases: list[Lease] = []
        async with anyio.create_task_group() as group:
            await _take(h, "a", ALICE, leases, "alice")
            assert h.scheduler.acquire_if_ready("a", {}, BATCH) is None  # not the last slot
            group.start_soon(_take, h, "a", BATCH, leases, "batch")
            await _queued(h, 1)
            group.start_soon(_take, h, "a", BOB, leases, "bob")  # bob's turn comes
            await h.until(lambda: h.order == ["alice", "bob"])
            leases.pop().release()
            await anyio.wait_all_tasks_blocked()
            assert h.order == ["alice", "bob"]
            leases[0].release()  # no person's request runs: batch has the slots
        assert h.order == ["alice", "bob", "batch"]
        leases[1].release()


async def test_batch_takes_no_new_slot_on_a_model_a_person_waits_to_swap_out() -> None:
    # The thrash trace again: bob's request runs on a, alice waits for b, and a has slots to
    # spare. Batch for a waits (for a's next load), so alice waits for bob's answer alone.
    async with (
        harness(models_max=1, a={"options": (("parallel", "3"),)}) as h,
        anyio.create_task_group() as group,
    ):
        a = await h.load("a")
        leases: list[Lease] = []
        await _take(h, "a", BOB, leases, "bob")
        early = h.scheduler.acquire_if_ready("a", {}, BATCH)  # nobody waits: a spare slot
        assert early is not None
        early.release()
        group.start_soon(_take, h, "b", ALICE, leases, "alice")
        await _queued(h, 1)
        assert h.scheduler.acquire_if_ready("a", {}, BATCH) is None
        group.start_soon(_take, h, "a", BATCH, leases, "batch")
        await _queued(h, 2)
        assert not a.stop_requested
        leases.pop().release()  # bob's answer ends: a is idle, and its batch waiter keeps it not
        await h.launched("b")
        assert a.stop_requested
        h.launcher.children["b"].ready()
        await h.until(lambda: h.order[-1] == "alice")
        leases.pop().release()
        assert h.scheduler.queue_depth == 1  # batch waits for a's next load, not failed
        group.cancel_scope.cancel()


async def test_keys_are_served_in_turns_not_in_arrival_order() -> None:
    async with harness(models_max=1, a=ONE_SLOT) as h, anyio.create_task_group() as group:
        await h.load("a")
        leases: list[Lease] = []
        await _take(h, "a", ALICE, leases, "alice")
        for depth in (1, 2, 3):  # alice's burst, then bob's one request
            group.start_soon(_take, h, "a", ALICE, leases, "alice")
            await _queued(h, depth)
        group.start_soon(_take, h, "a", BOB, leases, "bob")
        await _queued(h, 4)
        for served in range(2, 6):
            leases[served - 2].release()
            await h.until(lambda served=served: len(h.order) == served)  # type: ignore[misc]
        assert h.order == ["alice", "bob", "alice", "alice", "alice"]
        leases[-1].release()


async def test_batch_ages_past_the_bound_and_goes_first() -> None:
    async with (
        harness(models_max=1, wait_max=10.0, a=ONE_SLOT) as h,
        anyio.create_task_group() as g,
    ):
        await h.load("a")
        leases: list[Lease] = []
        await _take(h, "a", ALICE, leases, "first")
        g.start_soon(_take, h, "a", BATCH, leases, "batch")
        await _queued(h, 1)
        h.advance(10.0)
        g.start_soon(_take, h, "a", BOB, leases, "interactive")
        await _queued(h, 2)
        leases[0].release()
        await h.until(lambda: len(h.order) == 2)
        assert h.order == ["first", "batch"]
        leases[1].release()
        await h.until(lambda: len(h.order) == 3)
        leases[2].release()


@pytest.mark.parametrize("schedule", ["swap", "fifo"])
async def test_cold_loads_queued_behind_a_cold_load_are_all_served(schedule: str) -> None:
    # Upstream llama.cpp #28443: under --models-max 1, a second cold load queued while another
    # is waiting hung. Here a loads cold, b and c queue cold behind it; each is served in turn.
    async with harness(models_max=1, schedule=schedule) as h, anyio.create_task_group() as group:
        served: list[str] = []

        async def request(name: str) -> None:
            lease = await h.scheduler.acquire(name, {}, ALICE)
            served.append(name)
            lease.release()

        for depth, name in enumerate("abc", start=1):
            group.start_soon(request, name)
            await _queued(h, depth)
        for name in "abc":
            await h.launched(name)
            h.launcher.children[name].ready()
            await h.until(lambda name=name: name in served)  # type: ignore[misc]
        assert served == ["a", "b", "c"]
        assert h.scheduler.queue_depth == 0


@pytest.mark.parametrize(("schedule", "first"), [("swap", "c"), ("fifo", "b")])
async def test_fifo_keeps_arrival_order_where_swap_puts_interactive_first(
    schedule: str, first: str
) -> None:
    async with harness(models_max=1, schedule=schedule) as h, anyio.create_task_group() as group:
        a = await h.load("a")
        h.busy(a)
        leases: list[Lease] = []
        group.start_soon(_take, h, "b", BATCH, leases, "b")
        await _queued(h, 1)
        group.start_soon(_take, h, "c", BOB, leases, "c")
        await _queued(h, 2)
        h.done(a)
        await h.launched(first)
        assert h.launcher.launched == ["a", first]
        h.launcher.children[first].ready()
        await h.until(lambda: len(h.order) == 1)
        leases[0].release()
        # With swap, batch's b does not evict c while c's user may be back (demand.RETURN_S).
        h.advance(RETURN_S)
        second = "b" if first == "c" else "c"
        await h.launched(second)
        h.launcher.children[second].ready()
        await h.until(lambda: len(h.order) == 2)
        leases[1].release()


class _Backlogs:
    """Keys that keep requests waiting for a's one slot. Each request on the slot ends with
    what it cost, told to the line as the router's access-log record tells it, and its key
    sends another."""

    def __init__(self, h: Harness, group: TaskGroup) -> None:
        self.h, self.group = h, group
        self.admitted: list[tuple[Caller, Lease]] = []
        self.served: list[Caller] = []
        self.tokens: Counter[Caller] = Counter()

    async def start(self, first: Caller) -> None:
        self.admitted.append((first, await self.h.scheduler.acquire("a", {}, first)))

    async def send(self, caller: Caller) -> None:
        depth = self.h.scheduler.queue_depth + 1
        self.group.start_soon(self._ask, caller)
        await self.h.until(lambda: self.h.scheduler.queue_depth == depth)

    async def _ask(self, caller: Caller) -> None:
        self.admitted.append((caller, await self.h.scheduler.acquire("a", {}, caller)))

    async def end_one(self) -> None:
        caller, lease = self.admitted[len(self.served)]
        await self.send(caller)
        lease.release()
        self.h.scheduler.line.charge(caller, *COSTS[caller])
        self.served.append(caller)
        self.tokens[caller] += weighted_tokens(*COSTS[caller])
        await self.h.until(lambda: len(self.admitted) > len(self.served))

    def gap(self, since: Counter[Caller] | None = None) -> float:
        served = self.tokens - (since or Counter())
        return abs(served[HEAVY] - served[LIGHT])


async def test_two_busy_keys_share_the_tokens_within_the_bound() -> None:
    # Turns by request gave the heavy key 8 times the light one's tokens (issue 51).
    async with harness(models_max=1, a=ONE_SLOT) as h, anyio.create_task_group() as group:
        await h.load("a")
        keys = _Backlogs(h, group)
        await keys.start(HEAVY)
        for caller in (HEAVY, LIGHT, LIGHT):
            await keys.send(caller)
        for _ in range(30):
            await keys.end_one()
            assert keys.gap() <= MOST  # one slot, counts told before the next goes
        assert keys.served.count(LIGHT) > 4 * keys.served.count(HEAVY)
        group.cancel_scope.cancel()


async def test_a_key_back_from_away_brings_no_credit() -> None:
    async with harness(models_max=1, a=ONE_SLOT) as h, anyio.create_task_group() as group:
        await h.load("a")
        keys = _Backlogs(h, group)
        await keys.start(HEAVY)
        await keys.send(HEAVY)
        for _ in range(10):  # the heavy key alone: the light one is away
            await keys.end_one()
        back, at = len(keys.served), keys.tokens.copy()
        for _ in range(2):
            await keys.send(LIGHT)
        for _ in range(12):
            await keys.end_one()
            # The heavy request on the slot when it came back counts for the heavy key here,
            # and already did in the counter the light key was lifted to.
            assert keys.gap(since=at) <= 2 * MOST
        # The light key starts level with the heavy one: it does not take the slot for the
        # 50-odd requests the heavy key's tokens would buy, only for the one it is owed.
        assert HEAVY in keys.served[back + 1 : back + 3]
        group.cancel_scope.cancel()


# Two slots and the courtesy sequence the router gives its workers with swap (admission.py).
COURTEOUS = {"options": (("courtesy-slot", "true"), ("parallel", "2"))}


async def _fill(h: Harness, caller: Caller, leases: list[Lease]) -> None:
    """``caller`` takes both of a's slots."""
    await h.load("a")
    for _ in range(2):
        await _take(h, "a", caller, leases, caller.share or "")


async def test_the_courtesy_slot_goes_to_a_caller_with_nothing_in_flight() -> None:
    async with harness(models_max=1, a=COURTEOUS) as h, anyio.create_task_group() as group:
        leases: list[Lease] = []
        await _fill(h, HEAVY, leases)
        group.start_soon(_take, h, "a", HEAVY, leases, "heavy")  # its third: it waits
        await _queued(h, 1)
        # The light key's request is not kept behind the heavy key's answers: it has the
        # courtesy sequence at once, and the heavy key's waiter still waits.
        with anyio.fail_after(5):
            await _take(h, "a", LIGHT, leases, "light")
        assert h.scheduler.queue_depth == 1
        # The light key now has a request in flight: its next one waits like anybody's.
        group.start_soon(_take, h, "a", LIGHT, leases, "light again")
        await _queued(h, 2)
        # A slot that frees goes to the line's first (keys by tokens), the courtesy staying
        # the light request's until it ends.
        leases[0].release()
        await h.until(lambda: len(h.order) == 4)
        assert h.order[-1] == "heavy"  # level by tokens, the heavy key served longer ago
        assert h.scheduler.queue_depth == 1
        # The light request ends: its key has nothing in flight again, and the heavy key holds
        # both slots, so its next request has the courtesy sequence.
        leases[2].release()
        await h.until(lambda: len(h.order) == 5)
        assert h.order[-1] == "light again"
        group.cancel_scope.cancel()


async def test_the_courtesy_slot_goes_to_the_caller_holding_fewer_sequences() -> None:
    three = {"options": (("courtesy-slot", "true"), ("parallel", "3"))}
    async with harness(models_max=1, a=three) as h, anyio.create_task_group() as group:
        leases: list[Lease] = []
        await _fill(h, HEAVY, leases)
        await _take(h, "a", LIGHT, leases, "light")  # the third slot
        group.start_soon(_take, h, "a", HEAVY, leases, "heavy waits")
        await _queued(h, 1)
        # Holding one of three against the heavy key's two, the light key's next request is
        # not kept behind their answers: it has the courtesy sequence, the heavy key waits.
        with anyio.fail_after(5):
            await _take(h, "a", LIGHT, leases, "light again")
        assert h.scheduler.queue_depth == 1
        group.cancel_scope.cancel()


async def test_a_caller_holding_as_many_sequences_does_not_take_the_courtesy_slot() -> None:
    # The fair trace's pattern: the light key on one slot, the heavy key on the other and
    # behind by its counter (the light key, back from away, was lifted level and charged).
    async with harness(models_max=1, a=COURTEOUS) as h, anyio.create_task_group() as group:
        leases: list[Lease] = []
        await h.load("a")
        await _take(h, "a", HEAVY, leases, "heavy")
        await _take(h, "a", LIGHT, leases, "light")
        h.scheduler.line.charge(LIGHT, *COSTS[HEAVY])  # told early: the heavy key is behind
        # The heavy key's next waits for a slot rather than take the courtesy sequence ...
        group.start_soon(_take, h, "a", HEAVY, leases, "heavy again")
        await _queued(h, 1)
        assert h.order == ["heavy", "light"]
        # ... which the light key's next request then has at once.
        leases[1].release()
        await h.until(lambda: h.order[-1] == "heavy again")
        with anyio.fail_after(5):
            await _take(h, "a", LIGHT, leases, "light again")
        group.cancel_scope.cancel()


async def test_the_caller_that_fills_the_slots_never_gets_the_courtesy_slot() -> None:
    async with harness(models_max=1, a=COURTEOUS) as h:
        leases: list[Lease] = []
        await _fill(h, HEAVY, leases)
        assert h.scheduler.acquire_if_ready("a", {}, HEAVY) is None
        # Nor does batch over the people holding the slots.
        assert h.scheduler.acquire_if_ready("a", {}, BATCH) is None


async def test_the_courtesy_slot_goes_to_interactive_over_batch() -> None:
    async with harness(models_max=1, a=COURTEOUS) as h, anyio.create_task_group() as group:
        leases: list[Lease] = []
        await _fill(h, BATCH, leases)
        group.start_soon(_take, h, "a", BATCH, leases, "batch")
        await _queued(h, 1)
        # A person whose key shares the batch key's name would still go: classes first.
        person = Caller(Priority.INTERACTIVE, BATCH.key)
        with anyio.fail_after(5):
            await _take(h, "a", person, leases, "person")
        assert h.order[-1] == "person"
        # One courtesy sequence: another key's request waits for a slot.
        group.start_soon(_take, h, "a", ALICE, leases, "alice")
        await _queued(h, 2)
        leases[0].release()
        await h.until(lambda: len(h.order) == 4)
        assert h.order[-1] == "alice"  # interactive before batch for the freed slot
        group.cancel_scope.cancel()


async def test_without_the_courtesy_slot_a_full_model_keeps_everyone_waiting() -> None:
    two = {"options": (("parallel", "2"),)}
    async with harness(models_max=1, a=two) as h:
        leases: list[Lease] = []
        await _fill(h, HEAVY, leases)
        assert h.scheduler.acquire_if_ready("a", {}, LIGHT) is None
