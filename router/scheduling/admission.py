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

A model whose worker keeps a courtesy sequence (``--courtesy-slot``, which the router sets with
``swap``) takes one counted request more than its slots, but only one that would otherwise
wait behind other callers' answers: a caller holding fewer of the model's sequences than each
other caller of its class there (nothing, usually: while others fill its slots), or an
interactive request while only batch holds them. So a light key or a person gets a first token
at once, while a heavy key keeps every slot it had; a caller holding as many as another is
waiting for its own answers as much as for theirs, and never gets more by it. Not the token
counters: a key that comes back is lifted level with the busy one and charged its request, so
the busy key would read as behind the moment the light key holds a slot, and take the courtesy
sequence the light key's next request needs (the fair trace, docs/benchmarks.md). In line,
only the waiters owed the courtesy sequence are ranked for it: the others wait for a slot and
keep it from nobody. The courtesy is the request's until it ends: a slot that frees meanwhile
is the line's, as any.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Iterable

from corral.options.kv_layout import KvLayout, kv_layout
from corral.options.model_options import ModelOptions
from router.scheduling.waiting_line import Caller, Priority, Waiter, WaitingLine
from router.workers.model_state import ModelState

__all__ = ["Admission", "slots"]


def slots(state: ModelState) -> int:
    """How many requests the model's worker runs at once."""
    return _layout(state.entry.options).slots


@functools.lru_cache(maxsize=256)
def _layout(options: tuple[tuple[str, str], ...]) -> KvLayout:
    # Asked on every request: read once per set of options, not parsed each time. The slots
    # are those the worker makes and the router plans memory for.
    return kv_layout(ModelOptions.of(options))


def _courteous_to(caller: Caller, holders: Counter[Caller]) -> bool:
    """Whether ``caller`` is owed the courtesy sequence over the callers holding the slots:
    nobody there outranks its class, and it is either the only one of its class or holds fewer
    of the model's sequences than every other caller of its class there."""
    classes = {holder.priority for holder in holders}
    if caller.priority is Priority.BATCH and Priority.INTERACTIVE in classes:
        return False
    if caller.priority not in classes:
        return True
    held = Counter[str | None]()
    for holder, count in holders.items():
        if holder.priority is caller.priority:
            held[holder.share] += count
    mine = held.pop(caller.share, 0)
    return bool(held) and mine < min(held.values())


def _owed_courtesy(waiter: Waiter, holders: Counter[Caller]) -> bool:
    return _courteous_to(waiter.caller, holders)


class Admission:
    def __init__(self, line: WaitingLine, clock: Callable[[], float]) -> None:
        self._line = line
        self._clock = clock
        self._taken: dict[ModelState, int] = {}  # counted requests in flight, per model
        self._holders: dict[ModelState, Counter[Caller]] = {}  # and whose they are
        self._courtesy: dict[ModelState, int] = {}  # those taken beyond the slots
        # Requests a model was loaded for and has not served yet: it does not drain before.
        self._owed: dict[ModelState, int] = {}

    def taken(self, state: ModelState) -> int:
        return self._taken.get(state, 0)

    def full(self, state: ModelState, caller: Caller) -> bool:
        """Whether ``caller``'s request finds no sequence for it: every slot is taken, and the
        courtesy one is taken or not ``caller``'s to have."""
        # Asked for every generation: the dicts and the cache read directly, not through calls.
        courtesy, layout = self._courtesy.get(state, 0), _layout(state.entry.options)
        if self._taken.get(state, 0) - courtesy < layout.slots:
            return False
        holders = self._holders[state]
        return courtesy >= layout.courtesy or not _courteous_to(caller, holders)

    def may_take(
        self,
        state: ModelState,
        caller: Caller,
        waiter: Waiter | None,
        draining: Callable[[], set[str]],
    ) -> bool:
        """Whether ``caller``'s counted request may have the model now. ``waiter`` None: a
        newcomer, which goes only if nobody of this model waits before it. ``draining`` gives
        the models that take nobody new; asked only when somebody waits."""
        if not state.serving or self.full(state, caller):
            return False
        if caller.priority is Priority.BATCH and self._last_slot_kept(state, waiter):
            return False
        if waiter is None and not self._line:
            return True  # nobody waits, so nobody goes first and nothing drains (waiters age)
        if state.name in draining():
            return False
        # On the courtesy sequence only a caller owed it may go: the others before it in line
        # wait for a slot, and do not keep it from one they could not take.
        owed: Callable[[Waiter], bool] | None = None
        holders = self._holders.get(state)
        regular = self._taken.get(state, 0) - self._courtesy.get(state, 0)
        if holders is not None and regular >= slots(state):  # only the courtesy one is left
            owed = functools.partial(_owed_courtesy, holders=holders)
        first = self._line.first(state.name, owed)
        return first is None if waiter is None else first is waiter

    def owe(self, state: ModelState, waiters: int) -> None:
        """The model is being loaded for ``waiters`` requests."""
        self._owed[state] = waiters

    def _last_slot_kept(self, state: ModelState, waiter: Waiter | None) -> bool:
        """Whether the model's last free slot is kept from batch under the bound: a person's
        request runs on it, so another person may come to it any moment (a newcomer is never
        past the bound)."""
        holders = self._holders.get(state, Counter())
        people = any(holder.priority is not Priority.BATCH for holder in holders)
        if not people or (waiter is not None and self._line.aged(waiter)):
            return False
        regular = self._taken.get(state, 0) - self._courtesy.get(state, 0)
        return regular + 1 >= slots(state)

    def take(self, state: ModelState, caller: Caller) -> bool:
        """``caller``'s request has the model (:meth:`may_take` said so); whether it took the
        courtesy sequence, which :meth:`give_back` is told."""
        taken = self._taken.get(state, 0)
        courtesy = taken - self._courtesy.get(state, 0) >= slots(state)
        if courtesy:
            self._courtesy[state] = self._courtesy.get(state, 0) + 1
        self._taken[state] = taken + 1
        self._holders.setdefault(state, Counter())[caller] += 1
        owed = self._owed.pop(state, 0) - 1
        if owed > 0:
            self._owed[state] = owed
        return courtesy

    def give_back(self, state: ModelState, caller: Caller, courtesy: bool) -> None:
        if courtesy:
            _count_down(self._courtesy, state)
        _count_down(self._taken, state)
        holders = self._holders[state]
        holders[caller] -= 1
        if holders[caller] <= 0:
            del holders[caller]
        if not holders:
            del self._holders[state]

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
