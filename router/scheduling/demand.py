"""Recent demand per model and class: which models their users are about to come back to
(docs/serving.md, "Scheduling", *Expected return*).

A person reads an answer before asking again, so between two turns their model is idle; a
least-recently-used eviction then throws it out for the next model's request, and it is
loaded again a few seconds later. With ``--schedule swap`` the scheduler reads this record to
keep such a model:

- a model is *returning* when an interactive request was admitted to it within
  :data:`RETURN_S` seconds; a batch request that has not waited ``--schedule-wait-max`` does
  not evict a returning model (it waits, ageing as any waiter does);
- victims are taken in order of expected return: fewest interactive callers (keys) within
  :data:`RETURN_S` first, then fewest interactive requests, then least recently used; an
  interactive request that would evict a returning model waits instead for a model only
  batch is using, which takes no new request and goes when its last one ends
  (:mod:`router.scheduling.eviction`);
- a model loaded for batch keeps serving the backlog it was loaded for :data:`BATCH_QUANTUM_S`
  seconds before an interactive request may swap it out (a request past the bound still may),
  so the swap that batch waited for buys it more than the requests it was loaded for.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from router.scheduling.waiting_line import Caller, Priority
from router.workers.model_state import ModelState

__all__ = ["BATCH_QUANTUM_S", "RETURN_S", "Demand"]

# How long after an interactive turn its user is expected back: a person's think time between
# two chat turns is seconds to a quarter of a minute; an agent's is shorter.
RETURN_S = 15.0
# What a batch load buys: seconds of its backlog before an interactive request swaps it out.
BATCH_QUANTUM_S = 5.0
# A backlog is sent back to back: a model loaded for batch that none asked for this long has
# served it, and its quantum ends.
_BACKLOG_GAP_S = 1.0


class Demand:
    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        # Interactive admissions within RETURN_S: when, and whose key.
        self._interactive: dict[str, deque[tuple[float, str | None]]] = {}
        self._for_batch: set[str] = set()  # models whose current load a batch request made
        self._batch_at: dict[str, float] = {}  # last batch admission per model

    def note(self, model: str, caller: Caller) -> None:
        """A request of ``caller`` was admitted to ``model``."""
        if caller.priority is Priority.BATCH:
            self._batch_at[model] = self._clock()
        else:
            self._interactive.setdefault(model, deque()).append((self._clock(), caller.key))
            self._trim(model)

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
        return bool(self._trim(model))

    def loading(self, model: str, priority: Priority) -> None:
        """``model``'s load was claimed for a request of ``priority``."""
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
        for model in list(self._interactive):
            if times := self._trim(model):
                left.append(times[-1][0] + RETURN_S - now)
        for state in models:
            if state.serving and (quantum := self.quantum_left(state)) > 0:
                left.append(min(quantum, self._backlog_served_at(state) - now))
        return min(left, default=None)
