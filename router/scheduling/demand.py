"""Recent demand per model and class: which models their users are about to come back to
(docs/serving.md, "Scheduling", *Expected return*).

A person reads an answer before asking again, so between two turns their model is idle; a
least-recently-used eviction then throws it out for the next model's request, and it is
loaded again a few seconds later. With ``--schedule swap`` the scheduler reads this record to
keep such a model:

- a model is *returning* while its last interactive turn (admitted, or answered) is less than
  ``--schedule-keep-idle`` seconds old; a batch request that has not waited
  ``--schedule-wait-max`` does not evict a returning model (it waits, ageing as any waiter
  does). Past that the idle model is batch's: the box does not stay idle for a person who
  may not come back (``0``: given up at once);
- a person's model given up to batch so is *home* for :data:`RETURN_S` seconds: when the
  person comes back, their model goes ahead of the batch load that took its place (no batch
  quantum holds it; a spare worker and the KV restore make the way back short);
- victims are taken in order of expected return: fewest interactive callers (keys) within
  :data:`RETURN_S` first, then fewest interactive requests, then least recently used; an
  interactive request that would evict a returning model waits instead for a model only
  batch is using, which takes no new request and goes when its last one ends
  (:mod:`router.scheduling.eviction`);
- a model loaded for batch keeps serving the backlog it was loaded for :data:`BATCH_QUANTUM_S`
  seconds before an interactive request may swap it out (a request past the bound still may),
  so the swap that batch waited for buys it more than the requests it was loaded for; a
  person's request taken on it ends the quantum (the model is theirs too).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from router.scheduling.waiting_line import Caller, Priority
from router.workers.model_state import ModelState

__all__ = ["BATCH_QUANTUM_S", "RETURN_S", "Demand"]

# How long after an interactive turn its user is expected back: a person's think time between
# two chat turns is seconds to a quarter of a minute; an agent's is shorter. The ranking of
# victims reads this window; how long an idle model is kept from batch is the knob's.
RETURN_S = 15.0
# What a batch load buys: seconds of its backlog before an interactive request swaps it out.
BATCH_QUANTUM_S = 5.0
# A backlog is sent back to back: a model loaded for batch that none asked for this long has
# served it, and its quantum ends.
_BACKLOG_GAP_S = 1.0


class Demand:
    """``keep_idle``: seconds a model is kept from batch after its last interactive turn."""

    def __init__(self, clock: Callable[[], float], keep_idle: float = RETURN_S) -> None:
        self._clock = clock
        self.keep_idle = keep_idle
        # Interactive admissions within RETURN_S: when, and whose key.
        self._interactive: dict[str, deque[tuple[float, str | None]]] = {}
        self._turn_at: dict[str, float] = {}  # each model's last interactive admission or end
        # (one entry per model that ever had one: as many as the catalogue, never more)
        self._given_up: dict[str, float] = {}  # a person's model evicted for batch: when
        self._for_batch: set[str] = set()  # models whose current load a batch request made
        self._batch_at: dict[str, float] = {}  # last batch admission per model

    def note(self, model: str, caller: Caller) -> None:
        """A request of ``caller`` was admitted to ``model``."""
        if caller.priority is Priority.BATCH:
            self._batch_at[model] = self._clock()
        else:
            self._interactive.setdefault(model, deque()).append((self._clock(), caller.key))
            self._trim(model)
            self._turn_at[model] = self._clock()
            # A load that serves a person is theirs too, not batch's alone: the quantum would
            # make another person wait out batch's backlog on a model used by both.
            self._for_batch.discard(model)

    def ended(self, model: str, caller: Caller) -> None:
        """A request of ``caller`` to ``model`` ended: an interactive one starts its idle time."""
        if caller.priority is not Priority.BATCH:
            self._turn_at[model] = self._clock()

    def _trim(self, model: str) -> deque[tuple[float, str | None]]:
        times = self._interactive.get(model, deque())
        horizon = self._clock() - RETURN_S
        while times and times[0][0] <= horizon:
            times.popleft()
        if not times:
            self._interactive.pop(model, None)
        return times

    def recent(self, model: str) -> tuple[int, int]:
        """Interactive callers (keys), then requests, admitted to ``model`` within
        :data:`RETURN_S`: how many people are about to come back, and how often. Keys come
        first: on a slow box each person gets few answers in the window."""
        times = self._trim(model)
        return len({key for _, key in times}), len(times)

    def returning(self, model: str) -> bool:
        """Whether ``model``'s last interactive turn is under ``keep_idle`` seconds old."""
        at = self._turn_at.get(model)
        return at is not None and self._clock() - at < self.keep_idle

    def given_up(self, model: str) -> None:
        """``model`` was evicted for batch work: if a person's turn on it was lately (within
        RETURN_S of the end of its keep), it is their home."""
        at = self._turn_at.get(model)
        if at is not None and self._clock() - at < self.keep_idle + RETURN_S:
            self._given_up[model] = self._clock()

    def home(self, model: str) -> bool:
        """Whether ``model`` is a person's, given up to batch within :data:`RETURN_S`: its
        interactive request goes ahead of the batch load that took its place."""
        at = self._given_up.get(model)
        return at is not None and self._clock() - at < RETURN_S

    def loading(self, model: str, priority: Priority) -> None:
        """``model``'s load was claimed for a request of ``priority``."""
        self._given_up.pop(model, None)  # back: the next give-up is a new one
        if priority is Priority.BATCH:
            self._for_batch.add(model)
        else:
            self._for_batch.discard(model)

    def quantum_left(self, state: ModelState) -> float:
        """Seconds its batch quantum still keeps ``state`` loaded (0: none)."""
        if state.name not in self._for_batch or not state.loads:
            return 0.0
        now = self._clock()
        if self._backlog_served_at(state) <= now:
            return 0.0  # its backlog is served (or never came)
        return max(state.ready_at + BATCH_QUANTUM_S - now, 0.0)

    def _backlog_served_at(self, state: ModelState) -> float:
        """When ``state``'s batch backlog counts as served: a gap after its last batch
        admission (or its load, if none came since)."""
        return max(self._batch_at.get(state.name, 0.0), state.ready_at) + _BACKLOG_GAP_S

    def next_change(self, models: Iterable[ModelState]) -> float | None:
        """Seconds until a model stops returning or a quantum ends; None: neither will."""
        now, left = self._clock(), []
        for at in self._turn_at.values():
            if (until := at + self.keep_idle - now) > 0:
                left.append(until)
        for state in models:
            if state.serving and (quantum := self.quantum_left(state)) > 0:
                left.append(min(quantum, self._backlog_served_at(state) - now))
        return min(left, default=None)
