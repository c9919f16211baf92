"""Which idle model is stopped to make room, and which may not be yet (docs/serving.md,
"Scheduling"): least recently used with ``--schedule fifo`` (llama.cpp's router); with
``swap``, by expected return (:mod:`router.scheduling.demand`).

A base of :class:`~router.scheduling.scheduler.Scheduler`, which owns the pool, the queue and
the records these read.
"""

from __future__ import annotations

from collections.abc import Iterable

from router.scheduling.admission import Admission
from router.scheduling.demand import Demand
from router.scheduling.device_planner import DevicePlanner, DeviceSnapshot
from router.scheduling.waiting_line import Priority, WaitingLine
from router.workers.model_state import ModelState, Status
from router.workers.pool import WorkerPool

__all__ = ["Eviction"]


class Eviction:
    _pool: WorkerPool
    _admission: Admission
    demand: Demand
    line: WaitingLine
    devices: DevicePlanner | None

    def _wanted(self) -> set[str]:
        raise NotImplementedError

    def _draining(self) -> set[str]:
        raise NotImplementedError

    def _snapshot(self) -> DeviceSnapshot | None:
        raise NotImplementedError

    def _idle_models(self, resident_too: bool = True) -> list[ModelState]:
        """The models that may be stopped to make room: idle, loaded, unpinned, not wanted
        (and past their minimum residency and batch quantum, unless ``resident_too``). A
        draining model's waiters do not keep it: they wait for its next load."""
        wanted = self._wanted() - self._draining()
        return [
            state
            for state in self._pool.models.values()
            if state.status in (Status.LOADED, Status.SLEEPING)
            and state.in_flight == 0
            and not state.stop_requested
            and not state.entry.pin
            and state.entry.name not in wanted
            and (resident_too or not self._resident(state))
        ]

    def _resident(self, state: ModelState) -> bool:
        if self._admission.resident(state):
            return True
        return not self.line.fifo and self.demand.quantum_left(state) > 0

    def batch_only(self, coming: Iterable[ModelState]) -> bool:
        """Whether room is wanted only by batch requests under the bound: with ``swap`` they
        do not evict a model its interactive users are about to come back to. Never without
        a bound: nothing would end their wait."""
        if self.line.fifo or self.line.wait_max <= 0:
            return False
        firsts = [self.line.first(state.name) for state in coming]
        return all(
            w is not None and w.caller.priority is Priority.BATCH and not self.line.aged(w)
            for w in firsts
        )

    def batch_to_yield(self, short: set[str], victim: ModelState | None) -> ModelState | None:
        """A model only batch is using (busy, or within its quantum) to go instead of
        ``victim``, an idle model an interactive user is coming back to: the interactive
        request waits out the quantum and a batch request's end, not a swap and another one
        back. None when ``victim`` is nobody's to come back to, or no such model runs."""
        if self.line.fifo or short:
            return None  # ``short``: room on given GPUs, where the idle models there decide
        if victim is not None and not self.demand.returning(victim.name):
            return None
        batch_only = [
            state
            for state in self._pool.models.values()
            if state.status is Status.LOADED
            and (state.in_flight > 0 or self._resident(state))
            and not state.stop_requested
            and not state.entry.pin
            and not self.demand.returning(state.name)
            and ((w := self.line.first(state.name)) is None or w.caller.priority is Priority.BATCH)
        ]
        return min(batch_only, key=lambda state: state.last_used, default=None)

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

        ``on``: room is needed on these GPUs, so only a model that holds memory there will do;
        ``snap``: the GPUs as the decision that asks read them; ``resident_too``: a model within
        its minimum residency will do (an explicit load, a request waiting past the bound);
        ``for_batch``: only batch under the bound wants the room (:meth:`batch_only`), which
        evicts no model its interactive users are about to come back to.
        """
        candidates = self._idle_models(resident_too)
        if for_batch:
            candidates = [state for state in candidates if not self.demand.returning(state.name)]
        if on and self.devices is not None:
            planner, snap = self.devices, snap or self._snapshot()
            candidates = [state for state in candidates if on & planner.held(state, snap).keys()]
        if self.line.fifo:
            return min(candidates, key=lambda state: state.last_used, default=None)
        recent = self.demand.recent
        return min(
            candidates, key=lambda state: (recent(state.name), state.last_used), default=None
        )
