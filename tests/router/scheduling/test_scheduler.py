"""Scheduling rules (docs/protocol.md §4), one test per rule, driven through a fake launcher.

Time comes from a fake clock: ttl and backoff rules are checked by moving it, never by sleeping.
"""

from __future__ import annotations

import contextlib
import math
import signal
from dataclasses import replace

import anyio
import anyio.lowlevel
import pytest

from router.availability.errors import (
    AlreadyRunning,
    LoadFailed,
    LoadInterrupted,
    ModelNotFound,
    NoRoom,
)
from router.catalogue.catalogue import Catalogue
from router.workers.model_state import ModelState, Status
from tests.support.scheduling_harness import Harness, harness

pytestmark = pytest.mark.anyio


async def test_fifo_order_when_capacity_is_short() -> None:
    async with harness(models_max=1) as h, anyio.create_task_group() as group:
        await h.load("a")
        served: list[str] = []

        async def request(name: str) -> None:
            await h.request(name)
            served.append(name)

        for name in ("b", "c", "d"):
            group.start_soon(request, name)
            await anyio.lowlevel.checkpoint()  # let each join the queue in this order
        for name in ("b", "c", "d"):
            await h.launched(name)
            h.launcher.children[name].ready()
            await h.until(lambda name=name: name in served)  # type: ignore[misc]
        assert h.launcher.launched == ["a", "b", "c", "d"]
        assert served == ["b", "c", "d"]


async def test_requests_for_one_model_share_one_load_and_one_eviction() -> None:
    async with harness(models_max=1) as h, anyio.create_task_group() as group:
        await h.load("a")
        results: list[ModelState] = []

        async def request() -> None:
            results.append(await h.request("b"))

        for _ in range(3):
            group.start_soon(request)
        await h.launched("b")
        h.launcher.children["b"].ready()
        await h.until(lambda: len(results) == 3)
        assert h.launcher.launched == ["a", "b"]
        assert h.scheduler.evictions == 1
        assert h.state("a").status is Status.UNLOADED
        assert all(state is h.state("b") for state in results)


async def test_busy_model_is_never_evicted() -> None:
    async with harness(models_max=1) as h, anyio.create_task_group() as group:
        a = await h.load("a")
        h.busy(a)
        group.start_soon(h.request, "b")
        await h.until(lambda: h.scheduler.queue_depth == 1)
        assert not a.stop_requested
        assert a.status is Status.LOADED
        assert h.launcher.launched == ["a"]

        h.done(a)  # now idle: the queue may take its place
        await h.launched("b")
        assert h.state("a").status is Status.UNLOADED
        h.launcher.children["b"].ready()


async def test_disconnect_while_queued_evicts_nothing() -> None:
    async with harness(models_max=1) as h, anyio.create_task_group() as group:
        a = await h.load("a")
        h.busy(a)
        waiting = anyio.CancelScope()  # the client's request, which will go away
        group.start_soon(_cancellable, h, "b", waiting)
        await h.until(lambda: h.scheduler.queue_depth == 1)
        waiting.cancel()
        await h.until(lambda: h.scheduler.queue_depth == 0)
        h.done(a)
        assert not a.stop_requested
        assert a.status is Status.LOADED
        assert h.launcher.launched == ["a"]
        assert h.scheduler.evictions == 0


async def _cancellable(h: Harness, name: str, scope: anyio.CancelScope) -> None:
    with scope:
        await h.request(name)


async def test_two_models_waiting_evict_two_idle_models() -> None:
    async with harness(models_max=2) as h, anyio.create_task_group() as group:
        await h.load("a")
        await h.load("b")
        group.start_soon(h.request, "c")
        group.start_soon(h.request, "d")
        await h.launched("c")
        h.launcher.children["c"].ready()
        await h.launched("d")
        h.launcher.children["d"].ready()
        await h.until(lambda: h.scheduler.queue_depth == 0)
        assert h.scheduler.evictions == 2
        assert {n for n, s in h.pool.models.items() if s.running} == {"c", "d"}


async def test_least_recently_used_idle_model_is_the_victim() -> None:
    async with harness(models_max=2) as h:
        a = await h.load("a")
        b = await h.load("b")
        h.used_at(b, 5.0)  # b was used longer ago
        h.used_at(a, 10.0)
        assert h.scheduler.eviction.pick_victim() is b
        h.busy(b)
        assert h.scheduler.eviction.pick_victim() is a


async def test_fresh_model_is_not_evicted_before_its_waiters_are_served() -> None:
    async with harness(models_max=1) as h, anyio.create_task_group() as group:
        got: dict[str, bool] = {}

        async def request(name: str) -> None:
            lease = await h.scheduler.acquire(name, {})
            got[name] = lease.state.stop_requested  # must be a usable model when handed over
            lease.release()

        group.start_soon(request, "b")
        await h.launched("b")
        group.start_soon(request, "c")  # wants b's slot as soon as b is loaded
        await h.until(lambda: h.scheduler.queue_depth == 2)
        h.launcher.children["b"].ready()
        await h.launched("c")
        h.launcher.children["c"].ready()
        await h.until(lambda: len(got) == 2)
        assert got == {"b": False, "c": False}
        assert h.launcher.launched == ["b", "c"]


async def test_load_failure_fails_every_waiter_with_the_reason_then_retries() -> None:
    async with harness(models_max=2) as h:
        errors: list[LoadFailed] = []

        async def request() -> None:
            try:
                await h.request("a")
            except LoadFailed as exc:
                errors.append(exc)

        async with anyio.create_task_group() as group:
            group.start_soon(request)
            group.start_soon(request)
            await h.launched("a")
            h.launcher.children["a"].crash(1, "bad magic in GGUF header")
        assert [e.model for e in errors] == ["a", "a"]
        assert "bad magic in GGUF header" in str(errors[0].reason)
        state = h.state("a")
        assert state.failed
        assert state.exit_code == 1
        assert state.failures == 1

        h.clock.advance(60.0)  # past the retry backoff
        async with anyio.create_task_group() as group:  # the next request tries again
            group.start_soon(h.request, "a")
            await h.launched("a", times=2)
            h.launcher.children["a"].ready()
        assert state.status is Status.LOADED
        assert not state.failed
        assert state.failures == 0


async def test_a_failed_model_is_retried_only_once_its_backoff_has_passed() -> None:
    async with harness(models_max=0) as h:

        async def failing_request() -> None:
            with pytest.raises(LoadFailed):
                await h.request("a")

        async with anyio.create_task_group() as group:
            group.start_soon(failing_request)
            await h.launched("a")
            h.launcher.children["a"].crash(1)
        async with anyio.create_task_group() as group:
            group.start_soon(h.request, "a")
            await h.until(lambda: h.scheduler.queue_depth == 1)
            await anyio.wait_all_tasks_blocked()
            assert h.launcher.launched == ["a"]  # the first retry waits 0.5 s
            h.advance(0.4)
            await anyio.wait_all_tasks_blocked()
            assert h.launcher.launched == ["a"]
            h.advance(0.1)
            await h.launched("a", times=2)
            h.launcher.children["a"].ready()
        assert h.state("a").failures == 0


async def test_explicit_load_evicts_and_refuses_when_everything_is_busy() -> None:
    async with harness(models_max=1) as h:
        a = await h.load("a")
        h.busy(a)
        with pytest.raises(NoRoom):
            await h.scheduler.load_now("b")
        h.done(a)
        async with anyio.create_task_group() as group:
            group.start_soon(h.scheduler.load_now, "b")
            await h.launched("b")
        assert a.status is Status.UNLOADED
        assert a.exit_code is None
        with pytest.raises(AlreadyRunning):
            await h.scheduler.load_now("b")


async def test_pinned_model_is_never_a_victim() -> None:
    async with harness(models_max=2, a={"pin": True}) as h:
        a = await h.load("a")
        b = await h.load("b")
        h.used_at(a, 1.0)  # a is the least recent, but pinned
        h.used_at(b, 2.0)
        assert h.scheduler.eviction.pick_victim() is b
        h.busy(b)
        assert h.scheduler.eviction.pick_victim() is None


async def test_idle_model_past_its_ttl_is_unloaded() -> None:
    async with harness(models_max=0, a={"ttl": 30.0}) as h:
        a = await h.load("a")
        b = await h.load("b")  # no ttl: stays
        h.clock.advance(29.0)
        assert h.scheduler.unload_expired_now() == []
        h.clock.advance(1.0)
        assert h.scheduler.unload_expired_now() == [a]
        await h.until(lambda: a.status is Status.UNLOADED)
        assert a.exit_code is None  # stopped, not failed
        assert b.status is Status.LOADED


async def test_use_restarts_the_ttl() -> None:
    async with harness(models_max=0, a={"ttl": 30.0}) as h:
        a = await h.load("a")
        h.clock.advance(20.0)
        h.pool.touch(a)
        h.clock.advance(20.0)
        assert h.scheduler.unload_expired_now() == []
        assert not a.stop_requested


async def test_busy_model_outlives_its_ttl() -> None:
    async with harness(models_max=0, a={"ttl": 1.0}) as h:
        a = await h.load("a")
        h.busy(a)
        h.clock.advance(3600.0)  # many ttls pass; none may stop a busy model
        assert h.scheduler.unload_expired_now() == []
        assert not a.stop_requested
        h.done(a)
        assert h.scheduler.unload_expired_now() == [a]


async def test_a_requests_keep_alive_overrides_the_ttl_until_the_worker_exits() -> None:
    # Ollama's keep_alive (router/api/ollama): seconds, or inf for ever.
    async with harness(models_max=0, a={"ttl": 30.0}) as h:
        a, b = await h.load("a"), await h.load("b")
        h.pool.keep_alive(a, math.inf)
        h.pool.keep_alive(b, 5.0)  # b has no ttl of its own
        assert (h.scheduler.timers.expires_in(a), h.scheduler.timers.expires_in(b)) == (None, 5.0)
        h.clock.advance(3600.0)
        assert h.scheduler.unload_expired_now() == [b]
        await h.until(lambda: b.status is Status.UNLOADED)
        assert b.keep_alive is None  # the next worker of b has no ttl again
        h.pool.keep_alive(a, 0.0)
        assert h.scheduler.unload_expired_now() == [a]


async def test_stop_escalates_to_sigterm_then_sigkill() -> None:
    # A zero timeout: each step follows the last at once, so only the order is tested.
    async with harness(models_max=0, a={"stop_timeout": 0.0}) as h:
        a = await h.load("a")
        child = h.launcher.children["a"]
        child.ignore_exit_command = True
        child.ignore_sigterm = True
        await h.pool.stop(a)
        assert child.exit_commands == 1
        assert child.signals == [signal.SIGTERM, signal.SIGKILL]
        assert a.status is Status.UNLOADED
        assert a.exit_code is None  # we stopped it: not a failure


async def test_model_still_loading_is_killed_at_once() -> None:
    async with harness(models_max=0) as h, anyio.create_task_group() as group:
        group.start_soon(h.scheduler.load_now, "a")
        await h.launched("a")
        await h.pool.stop(h.state("a"))
        child = h.launcher.children["a"]
        assert child.exit_commands == 0
        assert child.signals == [signal.SIGKILL]


async def test_a_reload_that_removes_a_queued_model_fails_its_waiters_and_evicts_nothing() -> None:
    async with harness(models_max=1) as h:
        a = await h.load("a")
        h.busy(a)  # b waits in the queue
        failures: list[ModelNotFound] = []
        with anyio.fail_after(5):  # a waiter left hanging would be the bug
            async with anyio.create_task_group() as group:

                async def request_b() -> None:
                    with pytest.raises(ModelNotFound) as caught:
                        await h.request("b")
                    failures.append(caught.value)

                group.start_soon(request_b)
                await h.until(lambda: h.scheduler.queue_depth == 1)
                await h.pool.reload(Catalogue({"a": a.entry}))
        assert [f.model for f in failures] == ["b"]
        h.done(a)  # ticks: nothing is queued any more
        assert a.status is Status.LOADED
        assert not a.stop_requested
        assert h.scheduler.queue_depth == 0


async def test_a_queued_request_follows_its_model_to_new_settings_after_a_reload() -> None:
    async with harness(models_max=1) as h:
        a = await h.load("a")
        h.busy(a)
        served: list[ModelState] = []
        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:

                async def request_b() -> None:
                    served.append(await h.request("b"))

                group.start_soon(request_b)
                await h.until(lambda: h.scheduler.queue_depth == 1)
                b_entry = replace(h.state("b").entry, ttl=60.0)
                await h.pool.reload(Catalogue({"a": a.entry, "b": b_entry}))
                h.done(a)  # a goes idle and makes room
                await h.launched("b")
                h.launcher.children["b"].ready()
        assert served == [h.state("b")]
        assert served[0].entry.ttl == 60.0


async def test_a_request_that_joins_while_a_load_is_stopped_loads_the_model_again() -> None:
    # It never saw the stopped load run, so that load's end is no answer for it; it must claim
    # the next load rather than wait forever behind the queue entry's claim on the old one (a
    # stuck head of the queue stops every model's requests: bench/soak.py found it).
    async with harness(models_max=2) as h:

        async def first() -> None:
            # Interrupted, or served by the next load if that starts before it looks again.
            with contextlib.suppress(LoadInterrupted):
                await h.request("a")

        async with anyio.create_task_group() as group:
            group.start_soon(first)
            await h.launched("a")
            h.pool.request_stop(h.state("a"))
            group.start_soon(h.request, "a")
            await h.launched("a", times=2)
            h.launcher.children["a"].ready()
        assert h.state("a").status is Status.LOADED
        assert h.scheduler.queue_depth == 0


async def test_a_load_stopped_by_an_unload_still_fails_the_requests_that_waited_for_it() -> None:
    # Only the scheduler's own stops send waiters back in line (issue 51): a user's unload
    # answers them, as before.
    async with harness(models_max=2) as h, anyio.create_task_group() as group:
        group.start_soon(_unload_once_launched, h, "a")
        with pytest.raises(LoadInterrupted):
            await h.request("a")
        assert h.launcher.launched == ["a"]


async def _unload_once_launched(h: Harness, name: str) -> None:
    await h.launched(name)
    h.pool.request_stop(h.state(name))  # what POST /models/unload does
