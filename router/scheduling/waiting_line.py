"""The requests waiting for a model, and the order they are served in (docs/serving.md,
"Scheduling").

Every waiting request is a :class:`Waiter`: the model it wants, its :class:`Caller` (the class
and key id its key gives it) and when it came. :class:`WaitingLine` ranks them:

- ``fifo`` (``--schedule fifo``, llama.cpp's router): by arrival, nothing else;
- ``swap`` (the default): a request that has waited ``wait_max`` seconds (aged) goes before
  every other, oldest first, so nobody starves; then interactive before batch; then, within a
  class, the caller served longest ago first (round-robin by key id; without keys, other
  sites' pages take turns with the user: one caller's burst does not hold back another's single
  request); then arrival.

The line also says whose place goes when it is full (:meth:`WaitingLine.crowding`): no caller
holds more than its share of the places, and a caller holding the most gives up its newest to
one holding fewer. The line only orders and counts; when a waiter may go (a slot free, room
for a load) and when one is refused is the scheduler's (:mod:`router.scheduling.scheduler`).
"""

from __future__ import annotations

import enum
import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from router.catalogue.listing import QueueView

__all__ = ["Caller", "Priority", "QueueView", "Waiter", "WaitingLine", "caller_share"]

# One caller may hold at most this fraction of ``--max-queue``'s places (at least one): four
# callers filling their shares fill the queue, and a fifth still gets in (crowding).
_SHARES = 4


def caller_share(places: int) -> int:
    """The places one caller may hold in a queue of ``places`` (docs/serving.md)."""
    return max(1, places // _SHARES)


class Priority(enum.StrEnum):
    """A request's class (the key file's ``class=``); interactive goes first."""

    INTERACTIVE = "interactive"
    BATCH = "batch"


_CLASS_ORDER = {Priority.INTERACTIVE: 0, Priority.BATCH: 1}


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a request is from, as far as the order cares. ``key``: the key's id (a short hash,
    router.security.api_keys.key_id); None on a router without keys, where everyone is one
    interactive caller but for ``page``: the web pages only ``--cors-origins *`` covers (any
    site), one caller apart from the user's own tools and pages."""

    priority: Priority = Priority.INTERACTIVE
    key: str | None = None
    page: bool = False

    @property
    def share(self) -> str | None:
        """Whose turns and places these are: the key's, else the pages' ("*") or the user's."""
        if self.key is not None:
            return self.key
        return "*" if self.page else None


@dataclass(eq=False, slots=True)
class Waiter:
    model: str
    caller: Caller
    since: float  # on the scheduler's clock
    seq: int  # arrival order, ties broken by it
    refused: Exception | None = None  # pushed out of the line for another caller: its answer


@dataclass(slots=True)
class WaitingLine:
    clock: Callable[[], float]
    wait_max: float = 30.0  # seconds before a waiter ages; 0: never
    fifo: bool = False
    _waiters: list[Waiter] = field(default_factory=list)
    _seq: itertools.count[int] = field(default_factory=itertools.count)
    _turn: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _last_turn: dict[str | None, int] = field(default_factory=dict)  # share → when served

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
        """A request of ``caller`` was handed its model: its key's (or page's) turn is used."""
        self._last_turn[caller.share] = next(self._turn)

    def aged(self, waiter: Waiter) -> bool:
        return 0 < self.wait_max <= self.clock() - waiter.since

    def rank(self, waiter: Waiter) -> tuple[int, float, int, int, int]:
        """Sort key: lower goes first."""
        if self.fifo:
            return (0, 0.0, 0, 0, waiter.seq)
        if self.aged(waiter):
            return (0, waiter.since, 0, 0, waiter.seq)
        turn = self._last_turn.get(waiter.caller.share, 0)
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

    def waiting(self, model: str) -> int:
        """How many requests wait for ``model``."""
        return sum(w.model == model for w in self._waiters)

    def places(self, caller: Caller) -> int:
        """The places ``caller``'s key (or page) holds, for any model."""
        return sum(w.caller.share == caller.share for w in self._waiters)

    def crowding(self, caller: Caller) -> Waiter | None:
        """In a full line, the waiter to refuse so that ``caller`` gets a place: the newest of
        the caller holding the most places, if that is more than ``caller`` holds once in (a
        swap of equals would only churn); None: ``caller``'s newcomer is the one refused."""
        held = Counter(w.caller.share for w in self._waiters)
        newest = {w.caller.share: w for w in self._waiters}  # the line is in arrival order
        if not newest:
            return None
        most = max(newest, key=lambda share: (held[share], newest[share].seq))
        return newest[most] if held[most] > held[caller.share] + 1 else None

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
