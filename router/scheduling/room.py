"""Whether a model fits next to the running ones: by ``--models-max``, by the host memory
budget (``--models-memory-max``) and by each GPU's memory (docs/serving.md, "Scheduling").

A base of :class:`~router.scheduling.scheduler.Scheduler`, which owns the pool and the limits
these read.
"""

from __future__ import annotations

from router.scheduling.device_planner import DevicePlanner, DeviceSnapshot
from router.workers.memory_budget import MemoryBudget
from router.workers.model_state import ModelState, Status
from router.workers.pool import WorkerPool

__all__ = ["Room"]


class Room:
    _pool: WorkerPool
    _models_max: int
    memory: MemoryBudget | None
    devices: DevicePlanner | None

    def _snapshot(self) -> DeviceSnapshot | None:
        """What one decision reads of the GPUs, read once and passed down to every question
        it asks (router/scheduling/device_snapshot.py); None without a device planner."""
        return self.devices.snapshot() if self.devices is not None else None

    def _short_of(
        self,
        staying: list[ModelState],
        coming: list[ModelState],
        snap: DeviceSnapshot | None = None,
    ) -> set[str] | None:
        """None when ``coming`` may run next to ``staying`` (by count, host memory and GPU
        memory); else the GPUs that need room (empty: any idle model may make it)."""
        if 0 < self._models_max < len(staying) + len(coming):
            return set()
        if self.memory is not None:
            for state in staying:
                self._observe(state)
            if not self.memory.fits(staying, coming):
                return set()
        if self.devices is not None:
            running = [state for state in self._pool.models.values() if state.running]
            short = self.devices.victim_devices(staying, coming, running, snap)
            if short:
                return short
        return None

    def _observe(self, state: ModelState) -> None:
        """Measure a loaded model for the budget; only scheduling measures, /metrics only reads."""
        if self.memory is not None and state.status is Status.LOADED:
            self._pool.note_memory(state, self.memory.measure(state))

    def _has_room(self, state: ModelState) -> bool:
        return self._room_short(state, self._snapshot()) is None

    def _room_short(self, state: ModelState, snap: DeviceSnapshot | None) -> set[str] | None:
        # Stopping models still count: their processes have not exited yet.
        running = [other for other in self._pool.models.values() if other.running]
        return self._short_of(running, [state], snap)
