"""Fair places in the queue (docs/serving.md, "Scheduling"), on the scheduling harness: one
caller holds at most its share of ``--max-queue``; in a full queue, the caller holding the most
gives up its newest place to a caller holding fewer, not the newcomer; and the refusal says
whether the request would have waited for a slot or for a load.
"""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from router.availability.errors import QueueFull, SchedulingError
from router.scheduling.answers import api_error
from router.scheduling.leases import Lease
from router.scheduling.waiting_line import Caller, caller_share
from tests.support.scheduling_harness import Harness, harness

pytestmark = pytest.mark.anyio

ONE_SLOT = {"options": (("parallel", "1"),)}
ALICE, BOB = Caller(key="a11ce000"), Caller(key="b0b00000")
CAROL, DAVE, ERIN = Caller(key="ca401000"), Caller(key="da7e0000"), Caller(key="e414000")


Outcomes = list[tuple[str, Lease | SchedulingError]]


async def _wait(h: Harness, caller: Caller, tag: str, outcomes: Outcomes) -> None:
    try:
        outcomes.append((tag, await h.scheduler.acquire("a", {}, caller)))
    except SchedulingError as refused:
        outcomes.append((tag, refused))


async def _queued(h: Harness, depth: int) -> None:
    await h.until(lambda: h.scheduler.queue_depth == depth)
    await anyio.lowlevel.checkpoint()


async def _refused(h: Harness, caller: Caller) -> QueueFull:
    with pytest.raises(QueueFull) as refused:
        await h.scheduler.acquire("a", {}, caller)
    return refused.value


@pytest.mark.parametrize(("max_queue", "share"), [(1, 1), (4, 1), (8, 2), (512, 128)])
def test_a_callers_share_is_a_quarter_of_the_queue_and_at_least_one(
    max_queue: int, share: int
) -> None:
    assert caller_share(max_queue) == share


def test_without_keys_other_sites_pages_are_one_caller_apart_from_the_user() -> None:
    assert Caller().share is None
    assert Caller(page=True).share == "*"
    assert Caller(key="a11ce000", page=True).share == "a11ce000"  # a key is its own caller


async def test_a_caller_holding_its_share_is_refused_and_others_still_get_in() -> None:
    async with harness(models_max=1, max_queue=8, a=ONE_SLOT) as h, anyio.create_task_group() as g:
        await h.load("a")
        held = await h.scheduler.acquire("a", {}, ALICE)  # the one slot
        outcomes: Outcomes = []
        for depth in (1, 2):  # alice's share of 8 is 2
            g.start_soon(_wait, h, ALICE, f"alice {depth}", outcomes)
            await _queued(h, depth)

        refused = await _refused(h, ALICE)
        assert (refused.for_slot, refused.held) == (True, 2)
        answer = api_error(refused)
        assert answer.status == 503
        assert answer.headers == {"Retry-After": "1"}
        assert answer.message == (
            "too many requests are waiting for a slot; this caller already holds 2 of them, "
            "try again later"
        )
        g.start_soon(_wait, h, BOB, "bob", outcomes)  # there is room for another caller
        await _queued(h, 3)
        assert h.scheduler.places.rejections == 1

        held.release()  # bob's turn comes first (round-robin), and nobody waiting was refused
        await h.until(lambda: len(outcomes) == 1)
        assert [tag for tag, _ in outcomes] == ["bob"]
        assert isinstance(outcomes[0][1], Lease)
        g.cancel_scope.cancel()


async def test_in_a_full_queue_the_caller_holding_the_most_gives_up_its_newest_place() -> None:
    async with harness(models_max=1, max_queue=8, a=ONE_SLOT) as h, anyio.create_task_group() as g:
        await h.load("a")
        await h.scheduler.acquire("a", {}, ERIN)  # the one slot, until the end
        outcomes: Outcomes = []
        callers = {"alice": ALICE, "bob": BOB, "carol": CAROL, "dave": DAVE}
        for depth, (name, caller) in enumerate(2 * list(callers.items()), start=1):
            g.start_soon(_wait, h, caller, f"{name} {(depth + 3) // 4}", outcomes)
            await _queued(h, depth)  # two places each: the queue is full

        # Erin holds none: the newest place of a caller holding the most (dave's) is hers.
        g.start_soon(_wait, h, ERIN, "erin", outcomes)
        await h.until(lambda: len(outcomes) == 1)
        [(tag, crowded)] = outcomes
        assert tag == "dave 2"
        assert isinstance(crowded, QueueFull)
        assert (crowded.for_slot, crowded.held) == (True, 1)
        assert h.scheduler.line.places(ERIN) == 1
        assert h.scheduler.queue_depth == 8

        # Dave, holding one place fewer than the most, is refused rather than push another
        # out: a swap of equals would only take turns refusing each other.
        refused = await _refused(h, DAVE)
        assert (refused.for_slot, refused.held) == (True, None)
        assert api_error(refused).message == (
            "too many requests are waiting for a slot, try again later"
        )
        assert h.scheduler.places.rejections == 2
        g.cancel_scope.cancel()


async def test_a_full_queue_for_a_load_says_so() -> None:
    async with harness(models_max=1, max_queue=4) as h, anyio.create_task_group() as g:
        outcomes: Outcomes = []
        for depth, caller in enumerate((ALICE, BOB, CAROL, DAVE), start=1):
            g.start_soon(_wait, h, caller, "waiting", outcomes)
            await _queued(h, depth)  # one place each: full, and nobody holds more than erin will
        await h.launched("a")

        refused = await _refused(h, ERIN)
        assert (refused.for_slot, refused.held) == (False, None)
        assert api_error(refused).message == (
            "too many requests are waiting for models to load, try again later"
        )
        h.launcher.children["a"].ready()
        await h.until(lambda: len(outcomes) == 1)  # the waiters are served, none refused
        assert isinstance(outcomes[0][1], Lease)
        g.cancel_scope.cancel()
