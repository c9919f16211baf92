"""The models requests wait for, one entry each however many requests wait (docs/protocol.md
§4): they share one load and one eviction, and only the head of the queue may claim capacity.
An entry stays until the last of its waiters has been handed the model, so a fresh model is
never evicted before use.

A collaborator of :class:`~router.scheduling.scheduler.Scheduler`, given the waiting line (the
order the models go in) and a read-only view of the pool; the scheduler claims and loads. It
also says why a model's requests wait (``/models``' ``queue``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from router.scheduling.pool_view import PoolView
from router.scheduling.waiting_line import WaitingLine
from router.workers.model_state import ModelState, Status

__all__ = ["Entry", "LoadQueue"]


@dataclass
class Entry:
    name: str
    waiters: int = 0
    claimed: bool = False  # its load has started (by this queue or by someone else)


class LoadQueue:
    """``held(name)``: a removal is deleting the model's files (router.availability.load_holds), so
    it may not load until the reload that ends the hold."""

    def __init__(self, line: WaitingLine, pool: PoolView, held: Callable[[str], bool]) -> None:
        self._line = line
        self._pool = pool
        self._held = held
        self._entries: deque[Entry] = deque()

    def join(self, name: str) -> Entry:
        entry = next((e for e in self._entries if e.name == name), None)
        if entry is None:
            entry = Entry(name)
            self._entries.append(entry)
        entry.waiters += 1
        return entry

    def leave(self, entry: Entry) -> None:
        entry.waiters -= 1
        if entry.waiters == 0:
            self._entries.remove(entry)

    def wanted(self) -> set[str]:
        """The models requests wait for: never unloaded for their ttl."""
        return {entry.name for entry in self._entries}

    def claimed(self) -> set[str]:
        """The models whose load an entry has claimed (or seen start)."""
        return {entry.name for entry in self._entries if entry.claimed}

    def head(self) -> Entry | None:
        """The entry that may claim capacity now. A held model waits for the reload that ends
        the hold without holding up the queue behind it."""
        return next((e for e in self._in_order() if not self._held(e.name)), None)

    def _in_order(self) -> list[Entry]:
        """The entries in the order they may claim: as they came (fifo), else the line's order
        of the models that need a load (a loaded model's waiters wait for slots, not room)."""
        if self._line.fifo:
            return list(self._entries)
        entries = {e.name: e for e in self._entries}
        models = self._pool.models
        names = [n for n in self._line.models() if n in entries]
        return [entries[n] for n in names if n not in models or not models[n].serving]

    def why(
        self,
        state: ModelState,
        yielding: set[str],
        draining: Callable[[], set[str]],
        limit_reached: Callable[[ModelState], str | None],
    ) -> str:
        """Why ``state``'s requests wait, as /models says it: for its slots (``yielding``: only
        batch used it and an interactive request needs room; ``draining``: a request past the
        bound does), for its load, for the head of the queue, or for the room's limit."""
        if state.serving:
            if state.name in yielding:
                return "yielding"
            return "aging" if state.name in draining() else "busy"
        if state.status is Status.LOADING:
            return "loading"
        head = self.head()
        if head is None or head.name != state.name:
            return "queued"
        return limit_reached(state) or "loading"

    def coming(self) -> list[ModelState]:
        """The models that need room for a load nobody has claimed yet, as they came."""
        models = self._pool.models
        # A queued name a reload has removed needs no room.
        return [
            models[e.name]
            for e in self._entries
            if not e.claimed
            and e.name in models
            and not models[e.name].serving  # its waiters wait for slots, not room
            and not self._held(e.name)
        ]
