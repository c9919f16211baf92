"""Workers that stop making progress are killed, so their requests fail instead of hanging.

docs/operations.md (Faults). A worker owes progress while it loads and while it has requests in
flight; progress is any state message, any byte of an answer (the proxy reports each chunk) or
an answered liveness probe (``GET /health`` on the worker, answered by its event loop). A model
that owes progress and shows none for ``--stall-timeout`` seconds (``--load-timeout`` while it
loads) is handed to :meth:`~router.workers.pool.WorkerPool.kill_faulty`: its requests end with an
error that says why, it shows failed, and the next request loads it again.

Decisions read the injected clock and are taken by :meth:`StallWatchdog.check_now`; probes are
:meth:`StallWatchdog.probe_now`. :meth:`StallWatchdog.run` only calls both on a timer, so tests
drive the two steps by hand with a fake clock and never wait for time to pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
import msgspec
import structlog
from anyio.abc import TaskGroup

from router.workers.model_state import ModelState, Status
from router.workers.pool import WorkerPool
from router.workers.worker_http import UpstreamError

if TYPE_CHECKING:  # the settings name the layers above (keys, tools): a type, never an import
    from router.settings import ServeSettings

__all__ = ["FAULT_LOAD_STALLED", "FAULT_STALLED", "StallWatchdog"]

_log = structlog.get_logger("corral.watchdog")
# The reasons /models shows for a model the watchdog killed.
FAULT_STALLED = "stalled"
FAULT_LOAD_STALLED = "load_stalled"
# Checks run a few times per timeout, so a stall is caught within about a quarter of it late;
# at most once a second, as timeouts are seconds to minutes.
_CHECKS_PER_TIMEOUT = 4
_MAX_CHECK_INTERVAL = 1.0


class _Health(msgspec.Struct):
    engine_busy_seconds: float = 0.0


def _engine_busy_seconds(body: bytes) -> float:
    """The worker's report of how long its engine has been stuck in one step; 0 if none."""
    try:
        busy = msgspec.json.decode(body, type=_Health).engine_busy_seconds
    except msgspec.MsgspecError:
        return 0.0  # an answer from the event loop is still a sign of life
    return max(busy, 0.0)


class StallWatchdog:
    """Find and kill workers that owe progress and show none; 0 disables either timeout."""

    def __init__(
        self,
        pool: WorkerPool,
        settings: ServeSettings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._pool = pool
        # --stall-timeout and --load-timeout: read here, their one use.
        self._stall_timeout = settings.stall_timeout
        self._load_timeout = settings.load_timeout
        self._clock = clock  # the pool's clock too: progress times are read from it
        self._probing: set[str] = set()  # models with a probe in flight: one each at most
        self.kills = 0

    @property
    def enabled(self) -> bool:
        return self._stall_timeout > 0 or self._load_timeout > 0

    def _owed(self, state: ModelState) -> tuple[float, str, str] | None:
        """(timeout, fault, what) if the model owes progress now, else None."""
        if not state.running or state.stop_requested:
            return None  # already on its way out: nothing more to decide
        if state.status is Status.LOADING:
            if self._load_timeout > 0:
                return self._load_timeout, FAULT_LOAD_STALLED, "load stalled"
        elif state.in_flight > 0 and self._stall_timeout > 0:
            return self._stall_timeout, FAULT_STALLED, "stalled"
        return None

    def check_now(self) -> list[ModelState]:
        """Kill every worker silent for longer than its timeout; returns the ones killed."""
        now = self._clock()
        killed = []
        for state in self._pool.workers:
            owed = self._owed(state)
            if owed is None:
                continue
            timeout, fault, what = owed
            if now - state.last_progress >= timeout:
                _log.error("no progress from the worker", **state.named, seconds=timeout)
                self._pool.kill_faulty(state, fault, f"{what}: no progress for {timeout:g} s")
                self.kills += 1
                killed.append(state)
        return killed

    def _probe_wanted(self) -> list[ModelState]:
        # A loading worker reports its own progress; only busy, loaded ones are asked.
        return [
            state
            for state in self._pool.workers
            if state.in_flight > 0
            and state.serving
            and state.client is not None
            and state.name not in self._probing
        ]

    async def probe(self, state: ModelState) -> bool:
        """Ask the worker whether it is alive; an answer in time counts as progress.

        The probe rides the worker's keep-alive client and is answered by its event loop, so a
        stopped or frozen process fails it. The answer says how long the engine thread has been
        inside one step (``engine_busy_seconds``): progress dates from the start of that step,
        so a wedged engine thread behind a live event loop still runs out its timeout.
        """
        client = state.client
        if client is None:
            return False
        self._probing.add(state.name)
        try:
            with anyio.move_on_after(self._probe_timeout()):
                status, body = await client.exchange("GET", b"/health", None)
                if status == 200:
                    busy = _engine_busy_seconds(body)
                    self._pool.note_progress(state, at=self._clock() - busy)
                    return True
        except UpstreamError:
            pass  # gone or broken: no progress, the timeout decides
        finally:
            self._probing.discard(state.name)
        return False

    async def probe_now(self) -> None:
        """Probe every busy worker at once and wait for the answers (or their timeout)."""
        async with anyio.create_task_group() as group:
            for state in self._probe_wanted():
                group.start_soon(self.probe, state)

    def _probe_timeout(self) -> float:
        return self._check_interval() * 2

    def _check_interval(self) -> float:
        timeouts = [t for t in (self._stall_timeout, self._load_timeout) if t > 0]
        return min(min(timeouts, default=1.0) / _CHECKS_PER_TIMEOUT, _MAX_CHECK_INTERVAL)

    async def run(self, task_group: TaskGroup) -> None:
        """Probe and check forever; probes run in ``task_group`` so a hung one delays nothing."""
        if not self.enabled:
            return
        while True:
            if self._stall_timeout > 0:
                for state in self._probe_wanted():
                    task_group.start_soon(self.probe, state)
            self.check_now()
            await anyio.sleep(self._check_interval())
