"""Faults (docs/operations.md): stalls, load timeouts, the queue bound and crash loops.

Driven through the fake launcher and a fake clock: the watchdog decides only when the test says
"check now", after moving the clock, so no rule here depends on how fast the machine is.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from prometheus_client.parser import text_string_to_metric_families

from corral.children.protocol import StateMessage
from router.api.metrics import RequestCounter, render_metrics
from router.api.models import _status
from router.availability.errors import LoadFailed, LoadStalled, QueueFull, SchedulingError
from router.scheduling.answers import api_error
from router.scheduling.waiting_line import Caller
from router.settings import ServeSettings
from router.workers.model_state import ModelState, Status
from router.workers.stall_watchdog import FAULT_LOAD_STALLED, FAULT_STALLED, StallWatchdog
from tests.support.scheduling_harness import Harness, harness

pytestmark = pytest.mark.anyio


def _watchdog(h: Harness, stall: float = 60.0, load: float = 600.0) -> StallWatchdog:
    settings = ServeSettings(stall_timeout=stall, load_timeout=load)
    return StallWatchdog(h.pool, settings, clock=h.clock)


async def _request(h: Harness, name: str, errors: list[SchedulingError]) -> None:
    try:
        await h.request(name)
    except SchedulingError as error:
        errors.append(error)


# --- load timeout ------------------------------------------------------------------------------


async def test_a_load_without_progress_is_killed_and_its_requests_get_503() -> None:
    async with harness(models_max=0) as h, anyio.create_task_group() as group:
        watchdog = _watchdog(h, load=600)
        errors: list[SchedulingError] = []
        group.start_soon(_request, h, "a", errors)
        await h.launched("a")
        child = h.launcher.children["a"]

        h.advance(599)
        assert watchdog.check_now() == []
        child.say(StateMessage("loading", {"value": 0.5}))  # progress: the clock starts again
        await h.until(lambda: h.state("a").last_progress == h.clock.now)
        h.advance(599)
        assert watchdog.check_now() == []
        assert child.signals == []

        h.advance(1)
        assert watchdog.check_now() == [h.state("a")]
        await h.until(lambda: bool(errors))
        assert child.signals[0] == signal.SIGTERM
        state = h.state("a")
        assert state.status is Status.UNLOADED
        assert state.failed
        assert state.fault == FAULT_LOAD_STALLED
        assert state.error is not None
        assert "load stalled" in state.error
        assert isinstance(errors[0], LoadStalled)
        answer = api_error(errors[0])
        assert answer.status == 503
        assert "load stalled: no progress for 600 s" in answer.message


async def test_load_timeout_zero_never_kills() -> None:
    async with harness(models_max=0) as h, anyio.create_task_group() as group:
        watchdog = _watchdog(h, load=0)
        group.start_soon(h.request, "a")
        await h.launched("a")
        h.advance(10**6)
        assert watchdog.check_now() == []
        h.launcher.children["a"].ready()
        await h.until(lambda: h.state("a").status is Status.LOADED)


# --- stalls ------------------------------------------------------------------------------------


async def test_a_busy_worker_without_progress_is_killed_and_loads_again() -> None:
    async with harness(models_max=0) as h:
        watchdog = _watchdog(h, stall=60)
        a = await h.load("a")
        events = h.pool.events.subscribe()
        h.advance(1000)  # idle: it owes nothing, however long
        assert watchdog.check_now() == []

        h.busy(a)  # a request starts: from now on it owes progress
        h.advance(59)
        assert watchdog.check_now() == []
        h.pool.note_progress(a)  # a chunk of the answer arrived
        h.advance(59)
        assert watchdog.check_now() == []
        h.advance(1)
        assert watchdog.check_now() == [a]
        assert watchdog.check_now() == []  # killed once, however often it is checked

        await h.until(lambda: a.status is Status.UNLOADED)
        assert h.launcher.children["a"].signals[:2] == [signal.SIGTERM, signal.SIGCONT]
        assert a.failed
        assert a.fault == FAULT_STALLED
        assert a.error is not None
        assert a.error.startswith("stalled: no progress for 60 s")
        status = _status(a, h.scheduler.timers.retry_after(a))
        assert status.failed is True
        assert status.reason == "stalled"
        unloaded = (await events.next_batch(0))[-1]
        assert unloaded.data is not None
        assert unloaded.data["status"] == "unloaded"
        assert unloaded.data["reason"] == "stalled"
        assert status.retry_after == 0.5  # its first failure: the shortest backoff

        h.done(a)  # the cut relay lets go of it
        h.advance(0.5)
        async with anyio.create_task_group() as group:
            group.start_soon(h.request, "a")
            await h.launched("a", times=2)
            h.launcher.children["a"].ready()
        again = h.state("a")
        assert h.launcher.launched == ["a", "a"]
        assert again.status is Status.LOADED
        assert again.fault is None
        assert not again.failed


async def test_a_stalled_worker_that_ignores_sigterm_is_killed() -> None:
    async with harness(models_max=0, a={"stop_timeout": 0.0}) as h:
        a = await h.load("a")
        child = h.launcher.children["a"]
        child.ignore_sigterm = True
        h.busy(a)
        h.advance(60)
        assert _watchdog(h, stall=60).check_now() == [a]
        await h.until(lambda: a.status is Status.UNLOADED)
        assert child.received == ["SIGTERM", "SIGCONT", "SIGKILL"]
        assert a.failed
        assert a.fault == FAULT_STALLED


async def test_stall_timeout_zero_never_kills() -> None:
    async with harness(models_max=0) as h:
        a = await h.load("a")
        h.busy(a)
        h.advance(10**6)
        assert _watchdog(h, stall=0).check_now() == []
        assert a.status is Status.LOADED


@asynccontextmanager
async def _worker_health(answer: bytes | None) -> AsyncIterator[int]:
    """A loopback server in a worker's place: ``answer`` to every request, or none if None."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                if answer is not None:
                    writer.write(answer)
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the router closed its connection
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


def _close_client(state: ModelState) -> None:
    """The fake worker never exits by itself: close the router's connections to it."""
    if state.client is not None:
        state.client.abort()


async def _ready_on(h: Harness, name: str, port: int) -> ModelState:
    async with anyio.create_task_group() as group:
        group.start_soon(h.request, name)
        await h.launched(name)
        h.launcher.children[name].say(StateMessage("ready", {"port": port, "meta": {}}))
    return h.state(name)


async def test_an_answered_probe_is_progress() -> None:
    ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"
    async with harness(models_max=0) as h, _worker_health(ok) as port:
        watchdog = _watchdog(h, stall=60)
        a = await _ready_on(h, "a", port)
        h.busy(a)
        h.advance(59)
        await watchdog.probe_now()
        assert a.last_progress == h.clock.now
        h.advance(59)
        assert watchdog.check_now() == []
        _close_client(a)


async def test_a_probe_dates_progress_from_the_engine_s_last_step() -> None:
    # The event loop answers, but the engine thread has been inside one step for 30 s.
    body = b'{"status":"ok","engine_busy_seconds":30}'
    wedged = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    async with harness(models_max=0) as h, _worker_health(wedged) as port:
        watchdog = _watchdog(h, stall=60)
        a = await _ready_on(h, "a", port)
        h.busy(a)
        started = h.clock.now
        h.advance(59)
        assert await watchdog.probe(a) is True
        assert a.last_progress == started + 29
        h.advance(29)
        assert watchdog.check_now() == []
        h.advance(1)
        assert watchdog.check_now() == [a]
        _close_client(a)


async def test_a_probe_answered_503_is_no_progress() -> None:
    loading = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 2\r\n\r\n{}"
    async with harness(models_max=0) as h, _worker_health(loading) as port:
        watchdog = _watchdog(h, stall=60)
        a = await _ready_on(h, "a", port)
        h.busy(a)
        started = a.last_progress
        h.advance(60)
        assert await watchdog.probe(a) is False
        assert a.last_progress == started
        assert watchdog.check_now() == [a]
        _close_client(a)


# --- the queue bound ---------------------------------------------------------------------------


def _sample(exposition: str, name: str) -> float:
    """The value of ``corral_queue_<name>`` in the /metrics text, read by Prometheus' parser."""
    family = f"corral_queue_{name}"
    for metric in text_string_to_metric_families(exposition):
        if metric.name == family.removesuffix("_total"):
            return float(metric.samples[0].value)
    raise AssertionError(f"{family} missing from /metrics")


async def _keyed_request(h: Harness, name: str, errors: list[SchedulingError]) -> None:
    """A request for ``name`` from a key of its own (one caller holds at most its share of
    the queue: docs/serving.md, "Scheduling")."""
    try:
        lease = await h.scheduler.acquire(name, {}, Caller(key=f"key-{name}"))
    except SchedulingError as error:
        errors.append(error)
    else:
        lease.release()


async def test_requests_beyond_max_queue_are_refused_with_retry_after() -> None:
    async with harness(models_max=0, max_queue=2) as h, anyio.create_task_group() as group:
        errors: list[SchedulingError] = []
        for name in ("a", "b"):
            group.start_soon(_keyed_request, h, name, errors)
        await h.until(lambda: h.scheduler.queue_depth == 2)

        with pytest.raises(QueueFull) as refused:
            await h.scheduler.acquire("c", {}, Caller(key="key-c"))
        assert h.scheduler.places.rejections == 1
        assert h.scheduler.queue_depth == 2
        assert "c" not in h.launcher.launched
        answer = api_error(refused.value)
        assert answer.status == 503
        assert answer.headers == {"Retry-After": "1"}
        assert _sample(render_metrics(h.pool, h.scheduler, RequestCounter()), "rejections") == 1
        assert _sample(render_metrics(h.pool, h.scheduler, RequestCounter()), "depth") == 2

        # A model that serves needs no place in the queue, and a freed place is taken again.
        await h.launched("a")
        h.launcher.children["a"].ready()
        await h.until(lambda: h.scheduler.queue_depth == 1)
        await h.request("a")
        group.start_soon(_keyed_request, h, "c", errors)
        await h.until(lambda: h.scheduler.queue_depth == 2)
        assert h.scheduler.places.rejections == 1
        for name in ("b", "c"):
            await h.launched(name)
            h.launcher.children[name].ready()
        await h.until(lambda: h.scheduler.queue_depth == 0)
        assert errors == []


# --- crash loops -------------------------------------------------------------------------------


async def test_a_crash_looping_model_starts_no_process_during_its_backoff() -> None:
    async with harness(models_max=0) as h, anyio.create_task_group() as group:
        errors: list[SchedulingError] = []
        group.start_soon(_request, h, "a", errors)
        for failure, backoff in enumerate((0.5, 1.0, 2.0), start=1):
            await h.launched("a", times=failure)
            h.launcher.children["a"].crash(1, "error: cannot load")
            await h.until(lambda failure=failure: len(errors) == failure)  # type: ignore[misc]
            a = h.state("a")
            assert isinstance(errors[-1], LoadFailed)
            assert h.scheduler.timers.retry_after(a) == backoff
            status = _status(a, h.scheduler.timers.retry_after(a))
            assert status.reason == "crashed"
            assert status.retry_after == backoff

            # A request during the backoff waits; the clock is held just short of its end.
            group.start_soon(_request, h, "a", errors)
            await h.until(lambda: h.scheduler.queue_depth == 1)
            h.advance(backoff - 0.01)
            await anyio.wait_all_tasks_blocked()
            assert h.launcher.launched.count("a") == failure
            assert h.scheduler.timers.retry_after(a) == pytest.approx(0.01)
            h.advance(0.01)  # the backoff is over: the waiting request loads it again
        await h.launched("a", times=4)
        h.launcher.children["a"].ready()
        await h.until(lambda: h.scheduler.queue_depth == 0)
        assert len(errors) == 3
        assert h.scheduler.timers.retry_after(h.state("a")) == 0.0
