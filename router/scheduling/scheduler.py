"""Who gets loaded, in what order, and who is evicted for it (docs/protocol.md §4).

Requests for a model that is not running join a strict FIFO queue; requests for the same model
share one entry, hence one load and one eviction. Only the head of the queue may claim capacity.
When capacity is short, :meth:`Scheduler.tick` stops least-recently-used models that are idle,
loaded, unpinned and not wanted by any queue entry. A model keeps its queue entry until all of
its waiters have been handed the running model, so a fresh model is never evicted before use.
On GPUs the device planner says where a model loads and which device needs room; only idle
models on that device are evicted for it, and a load that ran out of device memory is tried
once more after the idle models there are stopped.

The scheduler decides; the :class:`~router.workers.pool.WorkerPool` starts and stops processes
and is the only writer of model state. Every decision is re-taken whenever the pool reports a
change, so there are no timers. Refusals are :mod:`router.workers.errors`, never HTTP.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import structlog

from router.observe.topics import Topic
from router.scheduling.device_planner import DevicePlanner, DeviceSnapshot
from router.scheduling.leases import Lease, RequestScope, bind
from router.workers.errors import (
    AlreadyRunning,
    BadModelFile,
    LoadFailed,
    LoadInterrupted,
    LoadsHeld,
    LoadStalled,
    NoRoom,
    OutOfDeviceMemory,
    QueueFull,
)
from router.workers.memory_budget import MemoryBudget
from router.workers.model_state import ModelState, Status
from router.workers.pool import WorkerPool

__all__ = ["Scheduler"]

_log = structlog.get_logger("corral.scheduler")
# A model that keeps failing to load is retried after 0.5 s, 1 s, 2 s … at most 30 s.
_BACKOFF_FIRST, _BACKOFF_MAX = 0.5, 30.0
_TTL_CHECK_SECONDS = 0.5


@dataclass
class _Entry:
    name: str
    waiters: int = 0
    claimed: bool = False  # its load has started (by this queue or by someone else)


class Scheduler:
    def __init__(
        self,
        pool: WorkerPool,
        models_max: int,
        memory: MemoryBudget | None = None,
        *,
        devices: DevicePlanner | None = None,
        max_queue: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._pool = pool
        self._models_max = models_max
        self._max_queue = max_queue  # requests waiting for loads, all models together; 0: no bound
        self._clock = clock  # the pool's clock too: ttl and backoff compare against its times
        self.memory = memory
        self.devices = devices  # GPU placement (router/scheduling/device_planner.py), if any
        self._queue: deque[_Entry] = deque()
        self.waits = 0  # requests that had to wait for a load, for /metrics
        self.wait_seconds = 0.0
        self.evictions = 0
        self.evicted: Topic[str] = Topic()  # a model stopped for another's room (its name)
        self.rejections = 0  # requests refused because the queue was full, for /metrics

    @property
    def fake_timing(self) -> float:
        """Seconds each proxied request is held for upstream's deterministic tests, or 0."""
        return self._pool.fake_timing

    @property
    def queue_depth(self) -> int:
        return sum(entry.waiters for entry in self._queue)

    def acquire_if_ready(self, name: str, request: RequestScope) -> Lease | None:
        """The fast path of :meth:`acquire`: the model serves now, so nothing waits."""
        return self.hold(self._pool.get(name), request)

    async def acquire(self, name: str, request: RequestScope) -> Lease:
        """A lease on the model once it serves, loading it (and evicting others) as needed.

        The request is counted busy on the model before it leaves the queue, so nobody can evict
        the model between its load and its use. The lease is bound to ``request`` at that
        moment and given back when the request ends (:mod:`router.scheduling.leases`), even if
        the request is cancelled before its handler sees the lease.
        """
        ready = self.acquire_if_ready(name, request)
        if ready is not None:
            return ready
        if 0 < self._max_queue <= self.queue_depth:
            # Refused before it waits: a flood of requests for slow loads must not pile up
            # memory and connections without bound.
            self.rejections += 1
            raise QueueFull(name)
        entry = self._join(name)
        started = time.monotonic()  # real time, not the clock: a metric, never a decision
        try:
            return await self._wait_for(name, entry, request)
        finally:
            self._leave(entry)
            self.waits += 1
            self.wait_seconds += time.monotonic() - started

    async def _wait_for(self, name: str, entry: _Entry, request: RequestScope) -> Lease:
        changed = self._pool.changed
        saw_loading = False
        while True:
            # Looked up each time: a reload may give the model new settings (a new state) or
            # remove it, which is ModelNotFound as for any unknown model.
            state = self._pool.get(name)
            lease = self.hold(state, request)  # counted busy before it leaves the queue
            if lease is not None:
                return lease
            if state.status is Status.LOADING and not state.stop_requested:
                saw_loading = entry.claimed = True
            elif state.status is Status.UNLOADED:
                if saw_loading and self._retry_out_of_memory(state):
                    saw_loading = False  # once: a second failure for memory is the answer
                elif saw_loading:
                    raise self._load_error(state)
                # Whatever load the entry had claimed is over (a waiter that saw it run has its
                # answer); this waiter never saw it, so it may claim the next one. Left claimed,
                # the entry would hold the head of the queue for ever.
                entry.claimed = False
                delay = self._backoff_left(state)
                if delay > 0:
                    with anyio.move_on_after(delay):
                        await changed.wait()
                    continue
                if self._try_claim(entry, state):
                    self.start(state)
                    continue
            self.tick()
            await changed.wait()

    def _retry_out_of_memory(self, state: ModelState) -> bool:
        """A first load that failed for device memory: evict the idle models on that device and
        let it be tried once more (every waiter decides alike: on the consecutive failures)."""
        oom = state.out_of_memory
        if oom is None or state.failures != 1:
            return False
        snap = self._snapshot()
        for victim in self._idle_models():
            if self.devices is not None and oom.device in self.devices.held(victim, snap):
                _log.info("evicting idle model for memory", model=victim.name, device=oom.device)
                self.evictions += 1
                self.evicted.publish(victim.name)
                self._pool.request_stop(victim)
        return True

    def start(self, state: ModelState) -> None:
        """Start a model (claimed, or to load at startup) where the device planner puts it."""
        placement = None
        if self.devices is not None:
            running = [other for other in self._pool.models.values() if other.running]
            placement = self.devices.place(state, running, self._pool.models.values())
        self._pool.start(state, placement)

    def _load_error(self, state: ModelState) -> LoadFailed | LoadInterrupted:
        if state.failed and state.bad_file:
            return BadModelFile(state.name, state.error)
        oom = state.out_of_memory
        if state.failed and oom is not None:
            return OutOfDeviceMemory(state.name, oom.device, oom.needed, oom.free)
        if state.failed and state.fault is not None:
            return LoadStalled(state.name, state.fault_message)
        if state.failed:
            return LoadFailed(state.name, state.error)
        return LoadInterrupted(state.name)

    def retry_after(self, state: ModelState) -> float:
        """Seconds before a model that failed may be loaded again; 0 when it may be now."""
        return max(self._backoff_left(state), 0.0) if state.failed else 0.0

    def _backoff_left(self, state: ModelState) -> float:
        if not state.failures:
            return 0.0
        backoff = min(_BACKOFF_FIRST * 2.0 ** (state.failures - 1), _BACKOFF_MAX)
        return state.failed_at + backoff - self._clock()

    def _join(self, name: str) -> _Entry:
        entry = next((e for e in self._queue if e.name == name), None)
        if entry is None:
            entry = _Entry(name)
            self._queue.append(entry)
        entry.waiters += 1
        self._pool.changed.notify()
        return entry

    def _leave(self, entry: _Entry) -> None:
        entry.waiters -= 1
        if entry.waiters == 0:
            self._queue.remove(entry)
        # The head may have changed, or a claim been freed: let the next waiter go.
        self._pool.changed.notify()
        self.tick()

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

    def _try_claim(self, entry: _Entry, state: ModelState) -> bool:
        # A held model (a removal is deleting its files, router.workers.load_holds) waits for
        # the reload that ends the hold, without holding up the queue behind it.
        head = next((e for e in self._queue if not self._pool.holds.held(e.name)), None)
        if head is not entry or entry.claimed or not self._has_room(state):
            return False
        entry.claimed = True
        return True

    def _idle_models(self) -> list[ModelState]:
        """The models that may be stopped to make room: idle, loaded, unpinned, not wanted."""
        wanted = {entry.name for entry in self._queue}
        return [
            state
            for state in self._pool.models.values()
            if state.status in (Status.LOADED, Status.SLEEPING)
            and state.in_flight == 0
            and not state.stop_requested
            and not state.entry.pin
            and state.entry.name not in wanted
        ]

    def pick_victim(
        self, on: set[str] | None = None, snap: DeviceSnapshot | None = None
    ) -> ModelState | None:
        """The least recently used model that may be stopped to make room, if any.

        ``on``: room is needed on these GPUs, so only a model that holds memory there will do;
        ``snap``: the GPUs as the decision that asks read them.
        """
        candidates = self._idle_models()
        if on and self.devices is not None:
            planner, snap = self.devices, snap or self._snapshot()
            candidates = [state for state in candidates if on & planner.held(state, snap).keys()]
        return min(candidates, key=lambda state: state.last_used, default=None)

    def tick(self) -> None:
        """Evict as many idle models as the queue needs; never blocks."""
        if self._models_max <= 0 and self.memory is None and self.devices is None:
            return
        models = self._pool.models
        # A queued name a reload has removed needs no room.
        coming = [
            models[e.name]
            for e in self._queue
            if not e.claimed and e.name in models and not self._pool.holds.held(e.name)
        ]
        if not coming:
            return
        # Stopping models count as gone: their room is already on its way. One reading of the
        # GPUs for the whole decision: a victim's memory is freed only once its process exits.
        staying = [s for s in models.values() if s.running and not s.stop_requested]
        snap = self._snapshot()
        while (short := self._short_of(staying, coming, snap)) is not None:
            victim = self.pick_victim(short, snap)
            if victim is None:
                return  # everything is busy: a finishing request ticks again
            _log.info("evicting idle model", model=victim.entry.name, for_queue=len(coming))
            self.evictions += 1
            self.evicted.publish(victim.name)
            self._pool.request_stop(victim)
            staying.remove(victim)

    async def load_now(self, name: str) -> None:
        """``POST /models/load``: bypass the queue, evicting idle models until this one fits."""
        state = self._pool.get(name)
        if state.running:
            raise AlreadyRunning(name)
        if self._pool.holds.held(state.name):
            raise LoadsHeld(name)
        # A decision per victim: each waits for the last one's exit, then reads the GPUs again.
        while (short := self._room_short(state, snap := self._snapshot())) is not None:
            victim = self.pick_victim(short, snap)
            if victim is None:
                raise NoRoom(name)
            self.evictions += 1
            self.evicted.publish(victim.name)
            self._pool.request_stop(victim)
            await victim.wait_exited()
            if state.running:  # lost a race to another load of it
                raise NoRoom(name)
        self.start(state)

    @staticmethod
    def ttl(state: ModelState) -> float | None:
        """Seconds idle before the model is unloaded: a request's keep-alive, else its ``ttl``;
        None: never."""
        ttl = state.keep_alive if state.keep_alive is not None else state.entry.ttl
        return None if ttl is None or math.isinf(ttl) else ttl

    def expires_in(self, state: ModelState) -> float | None:
        """Seconds until the ttl unloads the model if nothing uses it (0: due); None: never."""
        ttl = self.ttl(state)
        return None if ttl is None else max(0.0, state.last_used + ttl - self._clock())

    def unload_expired_now(self) -> list[ModelState]:
        """One pass of Corral's per-model ``ttl``: stop models idle for longer than theirs."""
        wanted = {entry.name for entry in self._queue}
        expired = [
            state
            for state in self._pool.models.values()
            if state.serving
            and state.in_flight == 0
            and state.name not in wanted
            and self.expires_in(state) == 0.0
        ]
        for state in expired:
            _log.info("unloading idle model", model=state.name, ttl=self.ttl(state))
            self._pool.request_stop(state)
        return expired

    async def unload_expired(self) -> None:
        """Run :meth:`unload_expired_now` every half second, forever."""
        while True:
            self.unload_expired_now()
            await anyio.sleep(_TTL_CHECK_SECONDS)

    def hold(self, state: ModelState, request: RequestScope) -> Lease | None:
        """A lease on a model that is running now, without ever loading it; None if it is not.

        Also for replays of resumable streams: they follow a worker's session, and must neither
        start a worker nor let the model be evicted under them.
        """
        if not self._pool.claim(state):
            return None
        return bind(request, Lease(state, self._release))

    def note_progress(self, state: ModelState) -> None:
        """The worker sent part of an answer: it is not stalled (see
        router.workers.stall_watchdog)."""
        self._pool.note_answer(state)

    def touch(self, state: ModelState) -> None:
        """A request was sent to the model: it is now the most recently used."""
        self._pool.touch(state)

    def _release(self, state: ModelState) -> None:
        """A lease ended (its request did): the model may be evictable now."""
        self._pool.release(state)
        self._observe(state)  # after use is when a model holds the most
        if state.in_flight == 0:
            self.tick()
