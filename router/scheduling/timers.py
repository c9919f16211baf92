"""What the scheduler decides by time alone: Corral's per-model ``ttl`` and the backoff before a
model that failed to load is tried again (docs/serving.md, "Scheduling").

A collaborator of :class:`~router.scheduling.scheduler.Scheduler`, given its clock and a
read-only view of the pool: it says which models are due, and the scheduler stops them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from router.scheduling.pool_view import PoolView
from router.workers.model_state import ModelState

__all__ = ["Timers"]

# A model that keeps failing to load is retried after 0.5 s, 1 s, 2 s … at most 30 s.
_BACKOFF_FIRST, _BACKOFF_MAX = 0.5, 30.0


class Timers:
    def __init__(self, pool: PoolView, clock: Callable[[], float]) -> None:
        self._pool = pool
        self._clock = clock  # the pool's clock too: ttl and backoff compare against its times

    def retry_after(self, state: ModelState) -> float:
        """Seconds before a model that failed may be loaded again; 0 when it may be now."""
        return max(self.backoff_left(state), 0.0) if state.failed else 0.0

    def backoff_left(self, state: ModelState) -> float:
        """Seconds before a load may be tried again after the last failed (0 or less: now)."""
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

    def expired(self, wanted: set[str]) -> list[ModelState]:
        """The models idle for longer than their ttl; never one of ``wanted`` (requests wait
        for it)."""
        return [
            state
            for state in self._pool.workers
            if state.serving
            and state.in_flight == 0
            and state.name not in wanted
            and self.expires_in(state) == 0.0
        ]
