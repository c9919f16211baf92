"""The engine thread's busy time, which ``/health`` reports so the router can see a wedged thread.

A fake model and a fake clock: the test holds a job on the engine thread with an event and
moves the clock by hand, so the busy time is exact and nothing waits for time to pass.
"""

from __future__ import annotations

import asyncio
import threading
from typing import cast

import pytest

from tests.support.fakes.fake_clock import FakeClock
from worker.engine.engine import Engine
from worker.engine.model import LoadedModel


class _IdleBatcher:
    busy = False

    def step(self) -> None:
        pass

    def save_idle(self) -> bool:
        return False  # no slot state left unsaved


class _FakeModel:
    """What the engine thread touches of a model when nothing generates."""

    batcher = _IdleBatcher()
    sleeping = False

    def close(self) -> None:
        pass


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_busy_seconds_grow_while_a_job_holds_the_thread_and_reset_when_it_waits() -> None:
    clock = FakeClock()
    engine = Engine(clock=clock)
    engine.start(lambda: cast(LoadedModel, _FakeModel()))
    started, release = threading.Event(), threading.Event()

    def stuck_job() -> str:
        started.set()
        release.wait(timeout=30)
        return "done"

    try:
        assert engine.busy_seconds() == 0.0
        job = asyncio.ensure_future(engine.call(stuck_job))
        assert await asyncio.to_thread(started.wait, 30)
        clock.advance(45)
        assert engine.busy_seconds() == 45.0
        release.set()
        assert await job == "done"
        # Idle again: the thread waits for work, which is not being stuck however long it lasts.
        for _ in range(1000):
            if engine.busy_seconds() == 0.0:
                break
            await asyncio.to_thread(lambda: None)  # let the engine thread reach its wait
        clock.advance(1000)
        assert engine.busy_seconds() == 0.0
    finally:
        release.set()
        await asyncio.to_thread(engine.stop)
