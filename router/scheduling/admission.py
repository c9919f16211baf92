"""Swap-aware admission: who may take a slot of a running model now (docs/serving.md,
"Scheduling").

With ``--schedule swap`` (the default) the router lets at most a model's slots (its
``parallel``, llama-server's four when automatic: :func:`corral.options.kv_layout.kv_layout`)
of counted requests reach its worker; the rest wait in the router's
:class:`~router.scheduling.waiting_line.WaitingLine`, so a free slot goes to the request the
line ranks first (interactive before batch, keys by tokens served) rather than to whoever the worker
read first. Requests for a loaded model keep being admitted while another model waits for its
room, which is what saves the swap, until a waiter for a model that is not loaded has waited
``--schedule-wait-max`` seconds: then the running models stop taking new requests (they
*drain*), and the first to go idle is evicted for it. A model just loaded stays
``min-residency`` seconds before it may be evicted, unless such an aged request needs it gone.
While a person's request runs on a model, batch under the bound does not take its last free
slot: the next person's turn on it (two people grouped on one load) finds a slot rather than
waiting for a batch answer.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from corral.options.kv_layout import kv_layout
from corral.options.model_options import ModelOptions
from router.scheduling.waiting_line import Caller, Priority, Waiter, WaitingLine
from router.workers.model_state import ModelState

__all__ = ["Admission", "slots"]


def slots(state: ModelState) -> int:
    """How many requests the model's worker runs at once."""
    return _slots(state.entry.options)


@functools.lru_cache(maxsize=256)
def _slots(options: tuple[tuple[str, str], ...]) -> int:
    # Asked on every request: read once per set of options, not parsed each time. The slots
    # are those the worker makes and the router plans memory for.
    return kv_layout(ModelOptions.of(options)).slots


class Admission:
    def __init__(self, line: WaitingLine, clock: Callable[[], float]) -> None:
        self._line = line
        self._clock = clock
        self._taken: dict[ModelState, int] = {}  # counted requests in flight, per model
        self._people: dict[ModelState, int] = {}  # of which interactive
        # Requests a model was loaded for and has not served yet: it does not drain before.
        self._owed: dict[ModelState, int] = {}

    def taken(self, state: ModelState) -> int:
        return self._taken.get(state, 0)

    def full(self, state: ModelState) -> bool:
        # Asked for every generation: the dict and the cache read directly, not through calls.
        return self._taken.get(state, 0) >= _slots(state.entry.options)

    def may_take(
        self,
        state: ModelState,
        caller: Caller,
        waiter: Waiter | None,
        draining: Callable[[], set[str]],
    ) -> bool:
        """Whether a counted request of ``caller`` may have the model now. ``waiter`` None: a
        newcomer, which goes only if nobody of this model waits before it. ``draining`` gives
        the models that take nobody new; asked only when somebody waits."""
        if not state.serving or self.full(state):
            return False
        if caller.priority is Priority.BATCH and self._last_slot_kept(state, waiter):
            return False
        if waiter is None and not self._line:
            return True  # nobody waits, so nobody goes first and nothing drains (waiters age)
        if state.name in draining():
            return False
        first = self._line.first(state.name)
        return first is None if waiter is None else first is waiter

    def owe(self, state: ModelState, waiters: int) -> None:
        """The model is being loaded for ``waiters`` requests."""
        self._owed[state] = waiters

    def _last_slot_kept(self, state: ModelState, waiter: Waiter | None) -> bool:
        """Whether the model's last free slot is kept from batch under the bound: a person's
        request runs on it, so another person may come to it any moment (a newcomer is never
        past the bound)."""
        if not self._people.get(state) or (waiter is not None and self._line.aged(waiter)):
            return False
        return self._taken.get(state, 0) + 1 >= _slots(state.entry.options)

    def take(self, state: ModelState, caller: Caller) -> None:
        self._taken[state] = self._taken.get(state, 0) + 1
        if caller.priority is not Priority.BATCH:
            self._people[state] = self._people.get(state, 0) + 1
        owed = self._owed.pop(state, 0) - 1
        if owed > 0:
            self._owed[state] = owed

    def give_back(self, state: ModelState, caller: Caller) -> None:
        _count_down(self._taken, state)
        if caller.priority is not Priority.BATCH:
            _count_down(self._people, state)

    def resident(self, state: ModelState) -> bool:
        """Loaded less than its minimum residency ago: not evicted yet."""
        return self._residency_left(state) > 0

    def _residency_left(self, state: ModelState) -> float:
        if self._line.fifo or not state.loads or state.entry.min_residency <= 0:
            return 0.0
        return state.ready_at + state.entry.min_residency - self._clock()

    def next_change(self, models: Iterable[ModelState]) -> float | None:
        """Seconds until a decision may change with time alone: a waiter ages, a model's
        residency ends; None: nothing changes until the pool does."""
        left = [r for state in models if state.serving and (r := self._residency_left(state)) > 0]
        aging = self._line.next_change()
        if aging is not None:
            left.append(aging)
        return min(left, default=None)

    def draining(self, running: Iterable[ModelState], waiting_for_room: set[str]) -> set[str]:
        """The running models that take no new request: all but the aged ones' own, while a
        request that aged waits for a model that is not loaded (``waiting_for_room``)."""
        if self._line.fifo or not (self._line.aged_models() & waiting_for_room):
            return set()
        # Owed only while its requests still wait: the ones that left were owed nothing.
        owed = {state.name for state in self._owed if self._line.first(state.name) is not None}
        return {state.name for state in running} - self._line.aged_models() - owed


def _count_down(counts: dict[ModelState, int], state: ModelState) -> None:
    left = counts.get(state, 0) - 1
    if left > 0:
        counts[state] = left
    else:
        counts.pop(state, None)
