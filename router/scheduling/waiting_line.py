"""The requests waiting for a model, and the order they are served in (docs/serving.md,
"Scheduling").

Every waiting request is a :class:`Waiter`: the model it wants, its :class:`Caller` (the class
and key id its key gives it) and when it came. :class:`WaitingLine` ranks them:

- ``fifo`` (``--schedule fifo``, llama.cpp's router): by arrival, nothing else;
- ``swap`` (the default): a request that has waited ``wait_max`` seconds (aged) goes before
  every other, oldest first, so nobody starves; then interactive before batch; then, within a
  class, the key served longest ago first (round-robin by key id: one key's burst does not hold
  back another key's single request); then arrival.

The line only orders and counts; when a waiter may go (a slot free, room for a load) is the
scheduler's (:mod:`router.scheduling.scheduler`).
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from router.catalogue.listing import QueueView

__all__ = ["Caller", "Priority", "QueueView", "Waiter", "WaitingLine"]


class Priority(enum.StrEnum):
    """A request's class (the key file's ``class=``); interactive goes first."""

    INTERACTIVE = "interactive"
    BATCH = "batch"


_CLASS_ORDER = {Priority.INTERACTIVE: 0, Priority.BATCH: 1}


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a request is from, as far as the order cares. ``key``: the key's id (a short hash,
    router.security.api_keys.key_id); None on a router without keys, where everyone is one
    interactive caller."""

    priority: Priority = Priority.INTERACTIVE
    key: str | None = None


@dataclass(eq=False, slots=True)
class Waiter:
    model: str
    caller: Caller
    since: float  # on the scheduler's clock
    seq: int  # arrival order, ties broken by it


@dataclass(slots=True)
class WaitingLine:
    clock: Callable[[], float]
    wait_max: float = 30.0  # seconds before a waiter ages; 0: never
    fifo: bool = False
    _waiters: list[Waiter] = field(default_factory=list)
    _seq: itertools.count[int] = field(default_factory=itertools.count)
    _turn: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _last_turn: dict[str | None, int] = field(default_factory=dict)  # key id → when served

    def __len__(self) -> int:
        return len(self._waiters)

    def join(self, model: str, caller: Caller) -> Waiter:
        waiter = Waiter(model, caller, self.clock(), next(self._seq))
        self._waiters.append(waiter)
        return waiter

    def leave(self, waiter: Waiter) -> None:
        if waiter in self._waiters:
            self._waiters.remove(waiter)

    def served(self, caller: Caller) -> None:
        """A request of ``caller`` was handed its model: its key's turn is used."""
        self._last_turn[caller.key] = next(self._turn)

    def aged(self, waiter: Waiter) -> bool:
        return 0 < self.wait_max <= self.clock() - waiter.since

    def rank(self, waiter: Waiter) -> tuple[int, float, int, int, int]:
        """Sort key: lower goes first."""
        if self.fifo:
            return (0, 0.0, 0, 0, waiter.seq)
        if self.aged(waiter):
            return (0, waiter.since, 0, 0, waiter.seq)
        turn = self._last_turn.get(waiter.caller.key, 0)
        return (1, 0.0, _CLASS_ORDER[waiter.caller.priority], turn, waiter.seq)

    def first(self, model: str | None = None) -> Waiter | None:
        """The waiter to serve next, of ``model`` or of any."""
        waiters = [w for w in self._waiters if model is None or w.model == model]
        return min(waiters, key=self.rank, default=None)

    def models(self) -> list[str]:
        """The models waited for, the one whose best waiter goes first first."""
        best: dict[str, tuple[int, float, int, int, int]] = {}
        for waiter in self._waiters:
            rank = self.rank(waiter)
            if waiter.model not in best or rank < best[waiter.model]:
                best[waiter.model] = rank
        return sorted(best, key=best.__getitem__)

    def aged_models(self) -> set[str]:
        return {w.model for w in self._waiters if self.aged(w)}

    def next_change(self) -> float | None:
        """Seconds until the next waiter ages (the order changes then); None: none will."""
        if self.fifo or self.wait_max <= 0:
            return None
        now = self.clock()
        left = [w.since + self.wait_max - now for w in self._waiters if not self.aged(w)]
        return max(min(left), 0.0) if left else None

    def view(self, model: str, reason: str | None) -> QueueView | None:
        waiters = [w for w in self._waiters if w.model == model]
        if not waiters:
            return None
        classes: dict[str, int] = {}
        keys: dict[str, int] = {}
        for waiter in waiters:
            classes[waiter.caller.priority] = classes.get(waiter.caller.priority, 0) + 1
            key = waiter.caller.key or ""
            keys[key] = keys.get(key, 0) + 1
        oldest = self.clock() - min(w.since for w in waiters)
        return QueueView(
            waiting=len(waiters),
            classes=classes,
            keys=keys,
            oldest_seconds=round(oldest, 3),
            reason=reason,
        )
