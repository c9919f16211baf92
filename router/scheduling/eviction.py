"""Which idle model is stopped to make room, and which may not be yet (docs/serving.md,
"Scheduling"): least recently used with ``--schedule fifo`` (llama.cpp's router); with
``swap``, by expected return (:mod:`router.scheduling.demand`).

A collaborator of :class:`~router.scheduling.scheduler.Scheduler`, given a read-only view of
the pool, the records it reads (the waiting line, admission, demand, the GPUs) and which models
the waiting requests keep: it names victims, and the scheduler stops them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from router.scheduling.admission import Admission
from router.scheduling.demand import Demand
from router.scheduling.placement.device_planner import DevicePlanner, DeviceSnapshot
from router.scheduling.placement.node_planner import node_label
from router.scheduling.pool_view import PoolView
from router.scheduling.waiting_line import Priority, Waiter, WaitingLine
from router.workers.model_state import ModelState, Status

__all__ = ["Eviction"]


class Eviction:
    """``kept()`` gives the models that waiting requests keep loaded (the scheduler's queue)."""

    def __init__(
        self,
        pool: PoolView,
        line: WaitingLine,
        admission: Admission,
        demand: Demand,
        devices: DevicePlanner | None,
        kept: Callable[[], set[str]],
    ) -> None:
        self._pool = pool
        self._line = line
        self._admission = admission
        self._demand = demand
        self._devices = devices
        self._kept = kept

    def _idle_models(self, resident_too: bool = True) -> list[ModelState]:
        """The models that may be stopped to make room: idle, loaded, unpinned, not kept
        (and past their minimum residency and batch quantum, unless ``resident_too``)."""
        kept = self._kept()
        return [
            state
            for state in self._pool.workers
            if state.status in (Status.LOADED, Status.SLEEPING)
            and state.in_flight == 0
            and not state.stop_requested
            and not state.entry.pin
            and state.entry.name not in kept
            and (resident_too or not self.resident(state))
        ]

    def resident(self, state: ModelState) -> bool:
        """Within its minimum residency or its batch quantum: not evicted yet (but for a
        request past the bound)."""
        if self._admission.resident(state):
            return True
        return not self._line.fifo and self._demand.quantum_left(state) > 0

    def holding(self, device: str) -> list[ModelState]:
        """The idle models that hold memory on ``device``: what a first load that ran out of
        memory there stops before it is tried once more."""
        if self._devices is None:
            return []
        planner, snap = self._devices, self._devices.snapshot()
        return [state for state in self._idle_models() if device in planner.held(state, snap)]

    def batch_only(self, coming: Iterable[ModelState]) -> bool:
        """Whether room is wanted only by batch requests under the bound: with ``swap`` they
        do not evict a model its interactive users are about to come back to. Never without
        a bound: nothing would end their wait."""
        if self._line.fifo or self._line.wait_max <= 0:
            return False
        firsts = [self._line.first(state.name) for state in coming]
        return all(w is not None and self._batch_under_bound(w) for w in firsts)

    def wanting(self, coming: list[ModelState]) -> tuple[list[ModelState], bool, bool]:
        """Of the models that need room, those it is made for now; whether only batch under
        the bound wants it (:meth:`batch_only`: no model a user is coming back to goes for
        it); whether a model within its residency or batch quantum may go for it (a request
        past the bound wants it, or a person back for the model batch took from them)."""
        # Room for batch under the bound comes only from models nobody is about to come back
        # to: while others want room too, they are served first, and batch's turn comes after.
        keen = [state for state in coming if not self.batch_only([state])]
        coming, for_batch = (keen, False) if keen else (coming, self.batch_only(coming))
        home = any(self._demand.home(state.name) for state in keen)
        return coming, for_batch, home or bool(self._line.aged_models() & {s.name for s in coming})

    def batch_to_yield(self, short: set[str], victim: ModelState | None) -> ModelState | None:
        """A model only batch is using (busy, or within its quantum) to go instead of
        ``victim``, an idle model an interactive user is coming back to: the interactive
        request waits out the quantum and a batch request's end, not a swap and another one
        back. None when ``victim`` is nobody's to come back to, or no such model runs."""
        if self._line.fifo or short:
            return None  # ``short``: room on given GPUs, where the idle models there decide
        if victim is not None and not self._demand.returning(victim.name):
            return None
        batch_only = [
            state
            for state in self._pool.workers
            if state.status is Status.LOADED
            and (state.in_flight > 0 or self.resident(state))
            and not state.stop_requested
            and not state.entry.pin
            and not self._demand.returning(state.name)
            and ((w := self._line.first(state.name)) is None or self._batch_under_bound(w))
        ]
        return min(batch_only, key=lambda state: state.last_used, default=None)

    def held_off_batch(
        self, coming: Iterable[ModelState], short: Callable[[ModelState], bool]
    ) -> set[str]:
        """The running models that take no new batch request under the bound: a person (or a
        request past the bound) waits for room for one of ``coming`` (``short`` of it now),
        and the first of them to go idle makes it; taking batch meanwhile would make that
        person wait for its answer. A model within its minimum residency or batch quantum is
        not to go yet: batch keeps it."""
        if self._line.fifo:
            return set()
        firsts = ((state, self._line.first(state.name)) for state in coming)
        if not any(
            w is not None and not self._batch_under_bound(w) and short(s) for s, w in firsts
        ):
            return set()
        workers = self._pool.workers
        return {state.name for state in workers if state.serving and not self.resident(state)}

    def batch_kept_off(
        self, coming: Iterable[ModelState], short: Callable[[ModelState], bool]
    ) -> set[str]:
        """Of :meth:`held_off_batch`, the models only batch under the bound waits for: those
        waiters do not keep the model from eviction (they wait for its next load)."""
        batch_only = {
            state.name
            for state in self._pool.workers
            if state.serving
            and (w := self._line.first(state.name)) is not None
            and self._batch_under_bound(w)
        }
        # Asked at every eviction decision: the room (maybe the GPUs) is read only if it matters.
        return batch_only and batch_only & self.held_off_batch(coming, short)

    def _batch_under_bound(self, waiter: Waiter) -> bool:
        """A batch request that has not waited the bound: an interactive one goes before it.
        Past the bound it goes first, and no model yields its place (docs/serving.md)."""
        return waiter.caller.priority is Priority.BATCH and not self._line.aged(waiter)

    def pick_victim(
        self,
        on: set[str] | None = None,
        snap: DeviceSnapshot | None = None,
        *,
        resident_too: bool = True,
        for_batch: bool = False,
    ) -> ModelState | None:
        """The model to stop to make room, if any: least recently used (``fifo``), else fewest
        interactive requests lately, then least recently used.

        ``on``: room is needed on these GPUs (or this cluster node), so only a model that holds
        memory there will do;
        ``snap``: the GPUs as the decision that asks read them; ``resident_too``: a model within
        its minimum residency will do (an explicit load, a request waiting past the bound);
        ``for_batch``: only batch under the bound wants the room (:meth:`batch_only`), which
        evicts no model its interactive users are about to come back to.
        """
        candidates = self._idle_models(resident_too)
        if for_batch:
            candidates = [state for state in candidates if not self._demand.returning(state.name)]
        if on and self._devices is not None:
            planner, snap = self._devices, snap or self._devices.snapshot()
            candidates = [state for state in candidates if on & planner.held(state, snap).keys()]
        elif on:  # a cluster's node needs room (router/scheduling/placement/node_planner.py)
            candidates = [s for s in candidates if s.node is not None and node_label(s.node) in on]
        if self._line.fifo:
            return min(candidates, key=lambda state: state.last_used, default=None)
        recent = self._demand.recent
        return min(
            candidates, key=lambda state: (recent(state.name), state.last_used), default=None
        )
