"""A worker pool and scheduler over the fake launcher and a fake clock, for scheduling tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from router.capacity.memory_budget import MemoryBudget
from router.catalogue.catalogue import Catalogue, CatalogueEntry
from router.scheduling.demand import RETURN_S
from router.scheduling.leases import Lease
from router.scheduling.placement.device_planner import DevicePlanner
from router.scheduling.placement.node_planner import NodePlanner
from router.scheduling.room import SchedulerLimits
from router.scheduling.scheduler import Scheduler
from router.workers.model_state import ModelState
from router.workers.pool import WorkerPool
from router.workers.spares import SpareWorkers
from tests.support.fakes.fake_clock import FakeClock
from tests.support.fakes.fake_launcher import FakeLauncher

__all__ = ["Harness", "harness"]


class Harness:
    def __init__(
        self,
        pool: WorkerPool,
        scheduler: Scheduler,
        launcher: FakeLauncher,
        clock: FakeClock,
        spares: SpareWorkers,
    ) -> None:
        self.pool, self.scheduler, self.launcher, self.clock = pool, scheduler, launcher, clock
        self.spares = spares
        self._leases: dict[str, list[Lease]] = {}  # what busy() took, per model
        self.order: list[str] = []  # what a test's requests were served, in order

    def state(self, name: str) -> ModelState:
        return self.pool.models[name]

    def busy(self, state: ModelState) -> None:
        """A request is being served by this model, until :meth:`done`."""
        lease = self.scheduler.hold(state, {})
        assert lease is not None
        self._leases.setdefault(state.name, []).append(lease)

    def done(self, state: ModelState) -> None:
        """The oldest request marked :meth:`busy` on this model ended: its lease goes back."""
        self._leases[state.name].pop(0).release()

    def used_at(self, state: ModelState, when: float) -> None:
        """The model was last used at ``when`` on the fake clock."""
        self.clock.now = when
        self.pool.touch(state)

    def advance(self, seconds: float) -> None:
        """Move the fake clock; waiters re-check, as a real timeout would have woken them."""
        self.clock.advance(seconds)
        self.pool.changed.notify()

    async def until(self, condition: Callable[[], bool]) -> None:
        """Wait for the pool to reach a condition (it notifies on every change)."""
        with anyio.fail_after(5):
            while not condition():
                await self.pool.changed.wait()

    async def launched(self, name: str, times: int = 1) -> None:
        with anyio.fail_after(5):
            while self.launcher.launched.count(name) < times:
                await self.launcher.spawned.wait()

    async def request(self, name: str) -> ModelState:
        """What a proxied request does: acquire the model, relay its answer, end (its lease
        goes back)."""
        lease = await self.scheduler.acquire(name, {})
        self.scheduler.note_progress(lease.state)
        lease.release()
        return lease.state

    async def load(self, name: str, devices: list[dict[str, Any]] | None = None) -> ModelState:
        """Bring a model up through the scheduler, as a request would; ``devices``: where its
        worker reports its bytes went (DeviceUse fields)."""
        launches = self.launcher.launched.count(name)
        async with anyio.create_task_group() as group:
            group.start_soon(self.request, name)
            await self.launched(name, times=launches + 1)
            self.launcher.children[name].ready(devices)
        return self.state(name)


@asynccontextmanager
async def harness(
    models_max: int,
    *,
    names: str = "abcd",
    memory: MemoryBudget | None = None,
    devices: DevicePlanner | None = None,
    max_queue: int = 0,
    spares: int = 0,
    schedule: str = "swap",
    wait_max: float = 30.0,
    keep_idle: float = RETURN_S,
    nodes: dict[str, int] | None = None,
    **special: dict[str, Any],
) -> AsyncIterator[Harness]:
    """Models named by letters; ``special`` gives some of them catalogue settings (pin, ttl…).
    No minimum residency unless ``special`` gives one: the fake clock stands still.

    Workers launch through ``spares`` spare workers, as the router's do; the test calls
    ``spares.fill()`` to start them. ``nodes``: a cluster's nodes and what each has room for
    (``--cluster``), all launching through the one fake launcher.
    """
    catalogue = Catalogue(
        {
            n: CatalogueEntry(
                n,
                Path(f"/models/{n}.gguf"),
                "models_dir",
                **{"min_residency": 0.0, **special.get(n, {})},
            )
            for n in names
        }
    )
    launcher, clock = FakeLauncher(), FakeClock()
    async with anyio.create_task_group() as group:
        spare_workers = SpareWorkers(launcher, spares, group)
        pool = WorkerPool(
            catalogue,
            launcher=spare_workers,
            task_group=group,
            clock=clock,
            node_launcher=None if nodes is None else lambda _: launcher,
        )
        spare_workers.attach(pool, memory)
        try:
            scheduler = Scheduler(
                pool,
                SchedulerLimits(most_resident=models_max, most_waiting=max_queue),
                memory,
                devices=devices,
                clock=clock,
                schedule=schedule,
                wait_max=wait_max,
                keep_idle=keep_idle,
                nodes=None if nodes is None else NodePlanner(lambda: nodes, MemoryBudget(0)),
            )
            yield Harness(pool, scheduler, launcher, clock, spare_workers)
        finally:
            spare_workers.close()  # first, or it would replace the spares close() ends
            launcher.close()
            group.cancel_scope.cancel()
