"""The pool's change signal (router/workers/broadcast.py): a notify wakes every waiter that
waits at that moment, and only those; notifies with nobody waiting (most requests' ends) lose
nothing for the waiters that come after them."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from router.workers.broadcast import Broadcast

pytestmark = pytest.mark.anyio


async def test_a_notify_wakes_the_waiters_of_that_moment_only() -> None:
    changed = Broadcast()
    woken: list[str] = []

    async def wait(name: str) -> None:
        await changed.wait()
        woken.append(name)

    changed.notify()  # nobody waits yet: nothing to wake, nothing kept for later
    async with anyio.create_task_group() as group:
        group.start_soon(wait, "a")
        group.start_soon(wait, "b")
        await anyio.wait_all_tasks_blocked()
        assert woken == []  # the notify before they waited did not wake them
        changed.notify()
        await anyio.wait_all_tasks_blocked()
        assert sorted(woken) == ["a", "b"]

        group.start_soon(wait, "c")  # waits after that notify: the next one wakes it
        await anyio.wait_all_tasks_blocked()
        assert sorted(woken) == ["a", "b"]
        changed.notify()
    assert sorted(woken) == ["a", "b", "c"]
