"""Places in the queue: ``--max-queue`` bounds the requests that wait, and each caller's share
of them (docs/serving.md, "Scheduling").

A collaborator of :class:`~router.scheduling.scheduler.Scheduler`, given the waiting line, a
read-only view of the pool and how to tell waiters that the line changed: before a request
joins the line it is given a place, or refused with QueueFull; neither a flood nor one caller's
detached sessions, which hold no connection, may take every place.
"""

from __future__ import annotations

from collections.abc import Callable

from router.availability.errors import QueueFull
from router.scheduling.pool_view import PoolView
from router.scheduling.waiting_line import Caller, WaitingLine, caller_share
from router.workers.model_state import ModelState

__all__ = ["Places"]


class Places:
    """``most``: the places in all (0: no bound); ``changed``: wakes the waiters."""

    def __init__(
        self, line: WaitingLine, pool: PoolView, most: int, changed: Callable[[], None]
    ) -> None:
        self._line = line
        self._pool = pool
        self.most = most
        self._changed = changed
        self.rejections = 0  # requests refused because the queue was full, for /metrics

    def make(self, state: ModelState, caller: Caller) -> None:
        """A place for a request of ``caller`` (a key, or a page without keys) to wait for
        ``state``, or QueueFull before it waits. In a full line, the caller holding the most
        places gives up its newest, whose request is told why."""
        held = self._line.places(caller)
        if held >= caller_share(self.most):
            raise self._refused(state.name, state, held)
        if len(self._line) < self.most:
            return
        crowded = self._line.crowding(caller)
        if crowded is None:
            raise self._refused(state.name, state)
        self._line.leave(crowded)  # its place is the newcomer's
        model, places = crowded.model, self._line.places(crowded.caller)
        crowded.refused = self._refused(model, self._pool.models.get(model), places)
        self._changed()

    def _refused(self, model: str, state: ModelState | None, held: int | None = None) -> QueueFull:
        self.rejections += 1
        # A running model's waiters wait for its slots (taken, or others go first).
        return QueueFull(model, for_slot=state is not None and state.serving, held=held)
