"""Whether a model fits next to the running ones: by ``--models-max``, by the host memory
budget (``--models-memory-max``) and by each GPU's memory (docs/serving.md, "Scheduling").

A collaborator of :class:`~router.scheduling.scheduler.Scheduler`, given the limits and a
read-only view of the pool; it stops nothing and starts nothing, but says where a model it lets
in goes (:meth:`Room.place`). The one thing it records is what a loaded model
was measured to hold, which the pool keeps as the figure its next load is expected to need.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from router.capacity.memory_budget import MemoryBudget
from router.capacity.placement import Placement
from router.scheduling.placement.device_planner import DevicePlanner, DeviceSnapshot
from router.scheduling.placement.node_planner import NodePlanner
from router.scheduling.pool_view import PoolView
from router.workers.model_state import ModelState, Status

__all__ = ["Room", "SchedulerLimits"]


@dataclass(frozen=True, slots=True)
class SchedulerLimits:
    """What the scheduler keeps to, built once from the settings (router/settings.py): the models
    running together (``--models-max``), which the room and the GPUs' shares
    (device_planner.py) read, and the requests waiting, all models together (``--max-queue``);
    0: no limit."""

    most_resident: int = 0
    most_waiting: int = 0


class Room:
    """``note_memory(state, measured)`` records a measurement (the pool's ``note_memory``)."""

    def __init__(
        self,
        pool: PoolView,
        most_resident: int,
        memory: MemoryBudget | None,
        devices: DevicePlanner | None,
        note_memory: Callable[[ModelState, int], None],
        nodes: NodePlanner | None = None,
    ) -> None:
        self._pool = pool
        self._most_resident = most_resident
        self._memory = memory
        self._devices = devices
        self._note_memory = note_memory
        self._nodes = nodes  # with --cluster: which node has room (router/cluster/)

    @property
    def limited(self) -> bool:
        """Whether anything limits the models that run together: else nothing is evicted."""
        return (
            self._most_resident > 0
            or self._memory is not None
            or self._devices is not None
            or self._nodes is not None
        )

    def snapshot(self) -> DeviceSnapshot | None:
        """What one decision reads of the GPUs, read once and passed down to every question
        it asks (router/scheduling/placement/device_snapshot.py); None without a device planner."""
        return self._devices.snapshot() if self._devices is not None else None

    def short_of(
        self,
        staying: list[ModelState],
        coming: list[ModelState],
        snap: DeviceSnapshot | None = None,
    ) -> set[str] | None:
        """None when ``coming`` may run next to ``staying`` (by count, host memory and GPU
        memory, and a node's with --cluster); else the GPUs or the node that need room (empty: any
        idle model may make it)."""
        if 0 < self._most_resident < len(staying) + len(coming):
            return set()
        if self._memory is not None:
            for state in staying:
                self.observe(state)
            if not self._memory.fits(staying, coming):
                return set()
        if self._nodes is not None:
            short = self._nodes.short_of(staying, coming)
            if short:
                return short
        if self._devices is not None:
            running = [state for state in self._pool.workers if state.running]
            short = self._devices.victim_devices(staying, coming, running, snap)
            if short:
                return short
        return None

    def observe(self, state: ModelState) -> None:
        """Measure a loaded model for the budget; only scheduling measures, /metrics only reads."""
        if self._memory is not None and state.status is Status.LOADED:
            self._note_memory(state, self._memory.measure(state))

    def place(self, state: ModelState) -> Placement | None:
        """Where ``state`` loads: the device planner's GPUs, the node planner's node (with
        --cluster); None when neither is in use (the worker's own defaults)."""
        workers = self._pool.workers
        running = [other for other in workers if other.running]
        placement = None
        if self._devices is not None:
            placement = self._devices.place(state, running, workers)
        if self._nodes is not None:
            placement = replace(placement or Placement(), node=self._nodes.place(state, running))
        return placement

    def fits(self, state: ModelState) -> bool:
        """Whether ``state`` fits next to every running model now."""
        return self.short_for(state, self.snapshot()) is None

    def limit_reached(self, state: ModelState) -> str | None:
        """Which limit keeps ``state`` from running next to every running model now, as the
        queue's ``reason`` names it (docs/serving.md): ``models-max`` for the count, ``memory``
        for the host budget or a GPU's; None when it fits."""
        if self.fits(state):
            return None
        running = sum(other.running for other in self._pool.workers)
        return "models-max" if 0 < self._most_resident <= running else "memory"

    def short_for(self, state: ModelState, snap: DeviceSnapshot | None) -> set[str] | None:
        """:meth:`short_of` for ``state`` next to every running model."""
        # Stopping models still count: their processes have not exited yet.
        running = [other for other in self._pool.workers if other.running]
        return self.short_of(running, [state], snap)
