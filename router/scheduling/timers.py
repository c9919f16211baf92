"""What the scheduler decides by time alone: Corral's per-model ``ttl`` and the backoff before a
model that failed to load is tried again (docs/serving.md, "Scheduling").

A base of :class:`~router.scheduling.scheduler.Scheduler`, which owns the pool, the clock and
the queue these read.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import anyio
import structlog

from router.workers.model_state import ModelState
from router.workers.pool import WorkerPool

__all__ = ["Timers"]

_log = structlog.get_logger("corral.scheduler")
# A model that keeps failing to load is retried after 0.5 s, 1 s, 2 s … at most 30 s.
_BACKOFF_FIRST, _BACKOFF_MAX = 0.5, 30.0
_TTL_CHECK_SECONDS = 0.5


class Timers:
    _pool: WorkerPool
    _clock: Callable[[], float]

    def _wanted(self) -> set[str]:
        """The models requests wait for: never unloaded for their ttl."""
        raise NotImplementedError

    def retry_after(self, state: ModelState) -> float:
        """Seconds before a model that failed may be loaded again; 0 when it may be now."""
        return max(self._backoff_left(state), 0.0) if state.failed else 0.0

    def _backoff_left(self, state: ModelState) -> float:
        if not state.failures:
            return 0.0
        backoff = min(_BACKOFF_FIRST * 2.0 ** (state.failures - 1), _BACKOFF_MAX)
        return state.failed_at + backoff - self._clock()

    @staticmethod
    def ttl(state: ModelState) -> float | None:
        """Seconds idle before the model is unloaded: a request's keep-alive, else its ``ttl``;
        None: never."""
        ttl = state.keep_alive if state.keep_alive is not None else state.entry.ttl
        return None if ttl is None or math.isinf(ttl) else ttl

    def expires_in(self, state: ModelState) -> float | None:
        """Seconds until the ttl unloads the model if nothing uses it (0: due); None: never."""
        ttl = self.ttl(state)
        return None if ttl is None else max(0.0, state.last_used + ttl - self._clock())

    def unload_expired_now(self) -> list[ModelState]:
        """One pass of Corral's per-model ``ttl``: stop models idle for longer than theirs."""
        wanted = self._wanted()
        expired = [
            state
            for state in self._pool.models.values()
            if state.serving
            and state.in_flight == 0
            and state.name not in wanted
            and self.expires_in(state) == 0.0
        ]
        for state in expired:
            _log.info("unloading idle model", model=state.name, ttl=self.ttl(state))
            self._pool.request_stop(state)
        return expired

    async def unload_expired(self) -> None:
        """Run :meth:`unload_expired_now` every half second, forever."""
        while True:
            self.unload_expired_now()
            await anyio.sleep(_TTL_CHECK_SECONDS)
