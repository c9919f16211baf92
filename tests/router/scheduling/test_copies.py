"""The rule that picks a copy of a model for a request (router/scheduling/copies.py): least
busy, a conversation kept on its copy, the bounded memory of conversations, a copy gone; and
the automatic bound (``replicas-max``) on the scheduler, over fake workers and a fake clock."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from router.catalogue.catalogue import CatalogueEntry
from router.scheduling.copies import (
    BUSY_SECONDS,
    IDLE_SECONDS,
    PREFIX_BYTES,
    Affinity,
    conversation_key,
)
from router.scheduling.leases import Lease
from router.scheduling.waiting_line import Caller
from router.workers.model_state import ModelFields, ModelState, Status
from tests.support.scheduling_harness import harness

ENTRY = CatalogueEntry("m", Path("/models/m.gguf"), "models_dir", replicas=3)


def _copies(*busy: int | None) -> list[ModelState]:
    """One copy per figure: its requests in flight, or None for a copy that does not run."""
    return [
        ModelState(
            ModelFields(
                ENTRY,
                [],
                status=Status.UNLOADED if n is None else Status.LOADED,
                in_flight=n or 0,
                copy=index,
            )
        )
        for index, n in enumerate(busy)
    ]


def test_the_least_busy_serving_copy_takes_a_new_request() -> None:
    copies = _copies(2, 1, None)
    assert Affinity().choose(copies) is copies[1]
    tied = _copies(1, 1, 1)
    assert Affinity().choose(tied) is tied[0]  # on a tie, the first


def test_a_conversation_stays_on_its_copy_however_busy() -> None:
    affinity = Affinity()
    copies = _copies(0, 1, 1)
    assert affinity.choose(copies, "id:a") is copies[0]
    busier = _copies(5, 0, 0)
    assert affinity.choose(busier, "id:a") is busier[0]
    assert affinity.choose(busier, "id:b") is busier[1]  # a new one: the least busy


def test_a_conversation_whose_copy_is_gone_moves_and_stays() -> None:
    affinity = Affinity()
    assert affinity.choose(_copies(0, 1), "id:a").copy == 0
    lost = _copies(None, 3, 2)
    assert affinity.choose(lost, "id:a") is lost[2]
    back = _copies(0, 3, 2)
    assert affinity.choose(back, "id:a") is back[2]


def test_the_conversations_remembered_are_bounded_least_recently_used_out() -> None:
    affinity = Affinity(cap=2)
    assert affinity.choose(_copies(0, 1), "id:a").copy == 0
    assert affinity.choose(_copies(1, 0), "id:b").copy == 1
    assert affinity.choose(_copies(1, 0), "id:a").copy == 0  # a used again: b is the oldest
    assert affinity.choose(_copies(0, 1), "id:c").copy == 0
    assert len(affinity) == 2
    assert affinity.choose(_copies(1, 0), "id:a").copy == 0  # still remembered
    assert affinity.choose(_copies(1, 0), "id:b").copy == 1  # forgotten: the least busy


def test_with_no_copy_serving_a_loading_copy_is_waited_for_else_one_that_does_not_run() -> None:
    copies = _copies(None, None, None)
    loading = ModelState(ModelFields(ENTRY, [], status=Status.LOADING, copy=1))
    assert Affinity().choose([copies[0], loading, copies[2]], "id:a") is loading
    assert Affinity().choose(copies, "id:a") is copies[0]


def test_a_conversation_key_is_its_header_else_its_long_prompt_prefix() -> None:
    assert conversation_key("abc", b"{}") == "id:abc"
    short = json.dumps({"messages": [{"role": "user", "content": "Hi"}]}).encode()
    assert conversation_key(None, short) is None
    opening = {"role": "system", "content": "x" * PREFIX_BYTES}
    first = {"messages": [opening, {"role": "user", "content": "one"}], "model": "m"}
    second = {"model": "m", "messages": [opening, {"role": "user", "content": "two"}]}
    key = conversation_key(None, json.dumps(first).encode())
    assert key is not None
    assert key == conversation_key(None, json.dumps(second, indent=2).encode())
    other = {"messages": [{"role": "system", "content": "y" * PREFIX_BYTES}]}
    assert conversation_key(None, json.dumps(other).encode()) != key
    long_prompt = json.dumps({"prompt": "z" * (2 * PREFIX_BYTES)}).encode()
    assert conversation_key(None, long_prompt) is not None
    assert conversation_key(None, b"not json") is None


@pytest.mark.anyio
async def test_a_queue_longer_than_the_slots_for_a_while_gets_a_copy_given_back_when_idle() -> None:
    one_slot = {"replicas_max": 2, "options": (("parallel", "1"),)}
    async with harness(models_max=0, names="a", a=one_slot) as h:
        scheduler = h.scheduler
        await h.load("a")
        first = scheduler.acquire_if_ready("a", {}, Caller())  # its one slot
        assert first is not None
        leases: list[Lease] = []

        async def wait() -> None:
            leases.append(await scheduler.acquire("a", {}, Caller()))

        async with anyio.create_task_group() as group:
            for _ in range(2):
                group.start_soon(wait)
            await h.until(lambda: scheduler.line.waiting("a") == 2)  # two waiters, one slot
            scheduler.bound_copies_now()
            h.advance(BUSY_SECONDS - 0.1)
            scheduler.bound_copies_now()
            assert h.launcher.launched.count("a") == 1  # not for long enough yet
            h.advance(0.1)
            scheduler.bound_copies_now()
            await h.launched("a", times=2)
            h.launcher.children["a"].ready()
            await h.until(lambda: len(leases) == 1)
            assert leases[0].state.copy == 1  # the new copy took a waiter
            first.release()
        assert [lease.state.copy for lease in leases] == [1, 0]
        for lease in leases:
            lease.release()
        copy = h.pool.copies("a")[1]
        h.advance(IDLE_SECONDS - 0.1)
        scheduler.bound_copies_now()
        assert not copy.stop_requested
        h.advance(0.1)
        scheduler.bound_copies_now()
        assert copy.stop_requested  # given back
        assert h.pool.copies("a")[0].serving  # the first copy stays
