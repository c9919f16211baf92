"""The requests waiting for a model, and the order they are served in (docs/serving.md,
"Scheduling").

Every waiting request is a :class:`Waiter`: the model it wants, its :class:`Caller` (the class
and key id its key gives it) and when it came. :class:`WaitingLine` ranks them:

- ``fifo`` (``--schedule fifo``, llama.cpp's router): by arrival, nothing else;
- ``swap`` (the default): a request that has waited ``wait_max`` seconds (aged) goes before
  every other, oldest first, so nobody starves; then interactive before batch; then, within a
  class, the caller served the fewest tokens first (a key; without keys, other sites' pages
  apart from the user: one caller's long requests do not hold back another's short ones);
  level, the one served longest ago (one caller's burst does not hold back another's single
  request); then arrival.

Tokens served are a virtual token counter per caller (VTC, Sheng et al., "Fairness in Serving
Large Language Models", OSDI 2024): a request adds its prompt tokens computed (not read from a
cache) once and its generated tokens twice, :func:`weighted_tokens`. What a request costs is
known when it ends (:meth:`WaitingLine.charge`); until then it counts as much as the caller's
last request did. A caller that comes back after being away (nothing waiting, nothing in
flight) starts at the lowest counter of its class's callers still there, or, if none is, at
the counter of the last one to leave: it brings no credit for the time it was away. Two
callers of one class that keep requests waiting for a model of ``S`` slots stay within
``(2S + 1) * U`` weighted tokens served of each other, ``U`` the most one request costs; with
one slot and each request's counts told before the next goes, within ``U`` (docs/serving.md,
"Scheduling").

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

__all__ = [
    "Caller",
    "Priority",
    "QueueView",
    "Waiter",
    "WaitingLine",
    "caller_share",
    "weighted_tokens",
]

# One caller may hold at most this fraction of ``--max-queue``'s places (at least one): four
# callers filling their shares fill the queue, and a fifth still gets in (crowding).
_SHARES = 4


# VTC's weights: a generated token costs twice a prompt token (the paper's w_q = 2 w_p), and a
# request with no counts (an error, a tokenize) still costs one, so it takes a turn.
_PROMPT_WEIGHT, _GENERATED_WEIGHT, _LEAST_COST = 1, 2, 1


def weighted_tokens(prompt: int, generated: int) -> int:
    """What a request served costs its caller's counter: ``prompt`` tokens computed, and
    ``generated`` ones."""
    return max(_PROMPT_WEIGHT * prompt + _GENERATED_WEIGHT * generated, _LEAST_COST)


def caller_share(places: int) -> int:
    """The places one caller may hold in a queue of ``places`` (docs/serving.md)."""
    return max(1, places // _SHARES)


class Priority(enum.StrEnum):
    """A request's class (the key file's ``class=``); interactive goes first."""

    INTERACTIVE = "interactive"
    BATCH = "batch"


_CLASS_ORDER = {Priority.INTERACTIVE: 0, Priority.BATCH: 1}
# A waiter's sort key, lower first: aged or not, since when if aged, class, tokens served,
# when last served, arrival.
Rank = tuple[int, float, int, float, int, int]


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
    counted: bool = True  # a generation, which spends its caller's tokens (not a GET)


@dataclass(slots=True)
class WaitingLine:
    clock: Callable[[], float]
    wait_max: float = 30.0  # seconds before a waiter ages; 0: never
    fifo: bool = False
    _waiters: list[Waiter] = field(default_factory=list)
    _seq: itertools.count[int] = field(default_factory=itertools.count)
    # Per share (a key, the pages, the user): weighted tokens served (its virtual counter),
    # its last request's cost, the guesses of requests whose cost is not told yet, its
    # requests in flight and its class; per class, where the last share to go left its counter.
    _served: dict[str | None, float] = field(default_factory=dict)
    _cost: dict[str | None, float] = field(default_factory=dict)
    _guessed: dict[str | None, tuple[int, float]] = field(default_factory=dict)  # count, sum
    _flying: Counter[str | None] = field(default_factory=Counter)
    _class_of: dict[str | None, Priority] = field(default_factory=dict)
    _left_at: dict[Priority, float] = field(default_factory=dict)
    _turn: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _last_turn: dict[str | None, int] = field(default_factory=dict)  # share → when served

    def __len__(self) -> int:
        return len(self._waiters)

    def join(self, model: str, caller: Caller, counted: bool = True) -> Waiter:
        if counted:
            self._come_back(caller)
        waiter = Waiter(model, caller, self.clock(), next(self._seq), counted=counted)
        self._waiters.append(waiter)
        return waiter

    def leave(self, waiter: Waiter) -> None:
        if waiter in self._waiters:
            self._waiters.remove(waiter)
            self._gone(waiter.caller)

    def served(self, caller: Caller) -> None:
        """A request of ``caller`` was handed its model: it counts as much as the caller's
        last one until :meth:`charge` says what it cost."""
        self._come_back(caller)
        share = caller.share
        cost = self._cost.get(share, _LEAST_COST)
        count, total = self._guessed.get(share, (0, 0.0))
        self._guessed[share] = (count + 1, total + cost)
        self._served[share] = self._served.get(share, 0.0) + cost
        self._flying[share] += 1
        self._last_turn[share] = next(self._turn)

    def done(self, caller: Caller) -> None:
        """A request :meth:`served` counted has ended (what it cost may be told later)."""
        share = caller.share
        self._flying[share] -= 1
        if self._flying[share] <= 0:
            del self._flying[share]
            self._gone(caller)

    def charge(self, caller: Caller, prompt: int, generated: int) -> None:
        """A request of ``caller`` that :meth:`served` counted cost ``prompt`` tokens computed
        and ``generated`` ones: its counter has that instead of the guess."""
        share, cost = caller.share, weighted_tokens(prompt, generated)
        count, total = self._guessed.pop(share, (0, 0.0))
        if not count:
            return  # not counted (``fifo``, a GET)
        guessed = total / count  # requests end in any order: once all are told, the sum is
        if count > 1:
            self._guessed[share] = (count - 1, total - guessed)
        self._served[share] = self._served.get(share, 0.0) + cost - guessed
        self._cost[share] = cost

    def _there(self, share: str | None) -> bool:
        """Whether ``share`` has a generation waiting or in flight."""
        return share in self._flying or any(
            w.counted and w.caller.share == share for w in self._waiters
        )

    def _come_back(self, caller: Caller) -> None:
        """``caller`` has a request waiting or served: if it was away, its counter is lifted
        to the lowest of its class's callers still there, else to that of the last of them to
        go, so that time away earns no credit (VTC)."""
        share, klass = caller.share, caller.priority
        if self.fifo or self._there(share):
            return
        there = {w.caller.share for w in self._waiters if w.counted and w.caller.priority is klass}
        there |= {s for s in self._flying if self._class_of.get(s) is klass}
        there.discard(share)
        floor = min((self._served.get(s, 0.0) for s in there), default=None)
        if floor is None:
            floor = self._left_at.get(klass, 0.0)
        self._served[share] = max(self._served.get(share, 0.0), floor)
        self._class_of[share] = klass

    def _gone(self, caller: Caller) -> None:
        """``caller`` may have nothing waiting or in flight any more: where the next one to
        come back to its class starts, if nobody else is there."""
        if not self._there(caller.share):
            self._left_at[caller.priority] = self._served.get(caller.share, 0.0)

    def aged(self, waiter: Waiter) -> bool:
        return 0 < self.wait_max <= self.clock() - waiter.since

    def rank(self, waiter: Waiter) -> Rank:
        """Sort key: lower goes first."""
        if self.fifo:
            return (0, 0.0, 0, 0.0, 0, waiter.seq)
        if self.aged(waiter):
            return (0, waiter.since, 0, 0.0, 0, waiter.seq)
        share = waiter.caller.share
        served = self._served.get(share, 0.0)
        # Even (a caller that came back starts even), the one served longest ago: one
        # caller's burst does not hold back another's single request.
        turn = self._last_turn.get(share, 0)
        return (1, 0.0, _CLASS_ORDER[waiter.caller.priority], served, turn, waiter.seq)

    def first(
        self, model: str | None = None, among: Callable[[Waiter], bool] | None = None
    ) -> Waiter | None:
        """The waiter to serve next, of ``model`` or of any; of those ``among`` says, if given."""
        waiters = [
            w
            for w in self._waiters
            if (model is None or w.model == model) and (among is None or among(w))
        ]
        return min(waiters, key=self.rank, default=None)

    def models(self) -> list[str]:
        """The models waited for, the one whose best waiter goes first first."""
        best: dict[str, Rank] = {}
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
