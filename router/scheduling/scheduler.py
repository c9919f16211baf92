"""Who gets loaded, in what order, and who is evicted for it (docs/protocol.md §4).

Requests for a model that is not running join the queue (:mod:`router.scheduling.waiting_line`:
strict FIFO with ``--schedule fifo``, else swap-aware, by class and key, with a bound on
waiting); with ``swap``, counted requests beyond a running model's slots wait there too.
Requests for the same model share one entry, hence one load and one eviction; only the head
may claim capacity. When capacity is short, :meth:`Scheduler.tick` stops models that are idle,
loaded, unpinned and not wanted by any queue entry: least recently used first, or with ``swap``
by expected return. A model keeps its queue entry until all of its waiters have been handed
the running model, so a fresh model is never evicted before use. On GPUs the device planner
says where a model loads and which device needs room; only idle models on that device are
evicted for it, and a load that ran out of device memory is tried once more after the idle
models there are stopped.

The scheduler is one loop that acts, as Ollama's sched.go: it alone asks the
:class:`~router.workers.pool.WorkerPool`, the only writer of model state, to start, stop or
count a model. Its collaborators are fields, each given only what it reads (a read-only
:class:`~router.scheduling.pool_view.PoolView` of the models, the line, the clock), and
answer its questions: :class:`~router.scheduling.places.Places` who may wait at all,
:class:`~router.scheduling.load_queue.LoadQueue` which load is next,
:class:`~router.scheduling.room.Room` whether it fits,
:class:`~router.scheduling.eviction.Eviction` who goes for it and for whom,
:class:`~router.scheduling.demand.Demand` who is about to come back,
:class:`~router.scheduling.timers.Timers` what time alone decides (ttl, backoff),
:class:`~router.scheduling.admission.Admission` who takes a slot. Every decision is re-taken
whenever the pool reports a change or a waiter's time comes. Refusals are
:mod:`router.availability.errors`, never HTTP.
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Callable
from functools import partial

import anyio
import structlog

from router.availability.errors import AlreadyRunning, LoadsHeld, NoRoom, load_error
from router.capacity.memory_budget import MemoryBudget
from router.scheduling.admission import Admission
from router.scheduling.copies import Copies
from router.scheduling.cores import CoreShare
from router.scheduling.demand import RETURN_S, Demand
from router.scheduling.eviction import Eviction
from router.scheduling.leases import Lease, RequestScope, bind
from router.scheduling.load_queue import Entry, LoadQueue
from router.scheduling.placement.device_planner import DevicePlanner
from router.scheduling.placement.node_planner import NodePlanner
from router.scheduling.places import Places
from router.scheduling.room import Room, SchedulerLimits
from router.scheduling.timers import Timers
from router.scheduling.waiting_line import Caller, Priority, QueueView, Waiter, WaitingLine
from router.topics import Topic
from router.workers.model_state import ModelState, Status
from router.workers.pool import WorkerPool

__all__ = ["Scheduler"]

_log = structlog.get_logger("corral.scheduler")
_TTL_CHECK_SECONDS = 0.5


class Scheduler:
    def __init__(
        self,
        pool: WorkerPool,
        limits: SchedulerLimits,
        memory: MemoryBudget | None = None,
        *,
        devices: DevicePlanner | None = None,
        clock: Callable[[], float] = time.monotonic,
        schedule: str = "swap",
        wait_max: float = 30.0,
        keep_idle: float = RETURN_S,
        cores: CoreShare | None = None,
        nodes: NodePlanner | None = None,
    ) -> None:
        self._pool = pool
        self.memory = memory
        self.devices = (
            devices  # GPU placement (router/scheduling/placement/device_planner.py), if any
        )
        self.cores = cores  # the CPU cores shared among busy workers (cores.py), if any
        self.line = WaitingLine(clock, wait_max, fifo=schedule == "fifo")
        self._queue = LoadQueue(self.line, pool, pool.holds.held)
        self._admission = Admission(self.line, clock)
        self.demand = Demand(clock, keep_idle)  # who is about to come back to which model
        self.nodes = nodes  # with --cluster: the node a model loads on (node_planner.py)
        self._room = Room(pool, limits.most_resident, memory, devices, pool.note_memory, nodes)
        self.timers = Timers(pool, clock)  # a model's ttl and backoff, which listings show too
        self.eviction = Eviction(pool, self.line, self._admission, self.demand, devices, self._kept)
        self._yielding: set[str] = set()  # busy with batch, taking none more: room is wanted
        self.waits = 0  # requests that had to wait for a load, for /metrics
        self.wait_seconds = 0.0
        self.evictions = 0
        self.evicted: Topic[str] = Topic()  # a model stopped for another's room (its name)
        # The models whose last stop was one of these evictions, until their next start: their
        # waiters are not answered by that stop, they wait for the next load (_wait_for).
        self._preempted: weakref.WeakSet[ModelState] = weakref.WeakSet()
        self.places = Places(self.line, pool, limits.most_waiting, pool.changed.notify)
        # Which of a model's copies (``replicas``) takes a request, which to load.
        self.copies = Copies(pool, self.line, self._room.fits, self.timers.backoff_left, clock)

    @property
    def fake_timing(self) -> float:
        """Seconds each proxied request is held for upstream's deterministic tests, or 0."""
        return self._pool.fake_timing

    @property
    def queue_depth(self) -> int:
        return len(self.line)

    def acquire_if_ready(
        self,
        name: str,
        request: RequestScope,
        caller: Caller | None = None,
        conversation: str | None = None,
    ) -> Lease | None:
        """The fast path of :meth:`acquire`: the model serves now, so nothing waits.

        ``caller``: a counted request (a generation) from this class and key, which with
        ``--schedule swap`` takes one of the model's slots; None: uncounted (GETs).
        ``conversation``: what keeps it on one of the model's copies (router/scheduling/copies.py).
        """
        lease = self._take(self.copies.pick(name, conversation), request, caller, None)
        if lease is not None:
            self._start_copies(lease.state)
        return lease

    def _start_copies(self, state: ModelState) -> None:
        for copy in self.copies.to_start(state):
            self.start(copy, copies=False)

    def _take(
        self, state: ModelState, request: RequestScope, caller: Caller | None, waiter: Waiter | None
    ) -> Lease | None:
        if caller is None or self.line.fifo:
            return self.hold(state, request)
        if not self._admission.may_take(
            state, caller, waiter, partial(self._closed, caller, waiter)
        ):
            return None
        if not self._pool.claim(state):
            return None
        courtesy = self._admission.take(state, caller)
        self.line.served(caller)
        self.demand.note(state.name, caller)
        return bind(request, Lease(state, partial(self._release_slot, caller, courtesy)))

    def queue_view(self, state: ModelState) -> QueueView | None:
        """The model's waiting requests and why they wait; None when none does."""
        if self.line.first(state.name) is None:
            return None  # the reason may read the GPUs: not for a model nobody waits for
        why = self._queue.why(state, self._yielding, self._draining, self._room.limit_reached)
        return self.line.view(state.name, why)

    def _draining(self) -> set[str]:
        """The running models that take no new request: some request past the bound waits for
        room (not for a retry's backoff, a removal's hold or a load already claimed)."""
        aged = self.line.aged_models()
        if not aged:
            return set(self._yielding)
        models, claimed = self._pool.models, self._queue.claimed()
        short = {name for name in aged - claimed if name in models and self._short(models[name])}
        running = [s for s in self._pool.workers if s.serving]
        return self._admission.draining(running, short) | self._yielding

    def _short(self, state: ModelState) -> bool:
        """Whether ``state`` waits for room now (not for a retry's backoff, a removal's hold)."""
        return (
            not state.running
            and not self._pool.holds.held(state.name)
            and self.timers.backoff_left(state) <= 0
            and not self._room.fits(state)
        )

    def _closed(self, caller: Caller, waiter: Waiter | None) -> set[str]:
        """The running models that take no new request of ``caller`` (waiting as ``waiter``)."""
        closed = self._draining()
        if caller.priority is Priority.BATCH and (waiter is None or not self.line.aged(waiter)):
            closed |= self.eviction.held_off_batch(self._queue.coming(), self._short)
        return closed

    def _release_slot(self, caller: Caller, courtesy: bool, state: ModelState) -> None:
        self.line.done(caller)
        self.demand.ended(state.name, caller)
        self._admission.give_back(state, caller, courtesy)
        self._release(state)
        self._pool.changed.notify()  # a slot is free: the next waiter may have it

    async def acquire(
        self,
        name: str,
        request: RequestScope,
        caller: Caller | None = None,
        conversation: str | None = None,
    ) -> Lease:
        """A lease on the model once it serves, loading it (and evicting others) as needed.

        The request is counted busy on the model before it leaves the queue, so nobody can evict
        the model between its load and its use. The lease is bound to ``request`` at that
        moment and given back when the request ends (:mod:`router.scheduling.leases`), even if
        the request is cancelled before its handler sees the lease.
        """
        ready = self.acquire_if_ready(name, request, caller, conversation)
        if ready is not None:
            return ready
        who = caller or Caller()  # uncounted (None) takes no slot, but waits in the line too
        if self.places.most:
            self.places.make(self._pool.get(name), who)
        entry = self._queue.join(name)
        self._pool.changed.notify()
        waiter = self.line.join(name, who, counted=caller is not None)
        started = time.monotonic()  # real time, not the clock: a metric, never a decision
        try:
            return await self._wait_for(name, entry, request, caller, waiter, conversation)
        finally:
            self.line.leave(waiter)
            self._queue.leave(entry)
            # The head may have changed, or a claim been freed: let the next waiter go.
            self._pool.changed.notify()
            self.tick()
            self.waits += 1
            self.wait_seconds += time.monotonic() - started

    async def _wait_for(
        self,
        name: str,
        entry: Entry,
        request: RequestScope,
        caller: Caller | None,
        waiter: Waiter,
        conversation: str | None,
    ) -> Lease:
        changed = self._pool.changed
        saw_loading = False
        while True:
            if waiter.refused is not None:  # pushed out for another caller's place
                raise waiter.refused
            # Looked up each time: a reload may give the model new settings (a new state) or
            # remove it, which is ModelNotFound as for any unknown model; another copy may serve.
            state = self.copies.pick(name, conversation)
            lease = self._take(state, request, caller, waiter)  # busy before it leaves the queue
            if lease is not None:
                return lease
            if state.serving:
                pass  # its slots are taken, or others go first: a release wakes it
            elif state.status is Status.LOADING and not state.stop_requested:
                saw_loading = entry.claimed = True
            elif state.status is Status.UNLOADED:
                if saw_loading and self._retry_out_of_memory(state):
                    saw_loading = False  # once: a second failure for memory is the answer
                elif saw_loading and state not in self._preempted:
                    raise load_error(state)  # failed, or stopped by an unload, reload, removal
                # Whatever load the entry had claimed is over (a waiter that saw it run has its
                # answer, unless the scheduler stopped it: then it waits on, with its age, for
                # the next); this one may claim the next load. Left claimed, the entry would
                # hold the head of the queue for ever.
                saw_loading = False
                entry.claimed = False
                delay = self.timers.backoff_left(state)
                if delay > 0:
                    with anyio.move_on_after(delay):
                        await changed.wait()
                    continue
                if self._try_claim(entry, state):
                    self.start(state)
                    continue
            self.tick()
            # Time alone changes the order when a waiter ages or a residency ends: wake then.
            models = self._pool.workers
            changes = (self._admission.next_change(models), self.demand.next_change(models))
            wake = min((c for c in changes if c is not None), default=math.inf)
            with anyio.move_on_after(wake):
                await changed.wait()

    def _retry_out_of_memory(self, state: ModelState) -> bool:
        """A first load that failed for device memory: evict the idle models on that device and
        let it be tried once more (every waiter decides alike: on the consecutive failures)."""
        oom = state.out_of_memory
        if oom is None or state.failures != 1:
            return False
        for victim in self.eviction.holding(oom.device):
            _log.info("evicting idle model for memory", **victim.named, device=oom.device)
            self._evict(victim)
        return True

    def _evict(self, victim: ModelState) -> None:
        """Stop ``victim`` for another model's room (counted, and told to the activity page);
        requests waiting for it (it drained or yielded) wait for its next load."""
        self.evictions += 1
        self.evicted.publish(victim.name)
        self._preempted.add(victim)
        self._pool.request_stop(victim)

    def start(self, state: ModelState, *, copies: bool = True) -> None:
        """Start a model (claimed, or to load at startup) where the device planner puts it;
        then its other copies (``replicas``) where there is room, unless ``copies`` is False."""
        self._preempted.discard(state)  # this load's end answers whoever waits for it
        self._pool.start(state, self._room.place(state))
        if copies:
            self._start_copies(state)

    def _kept(self) -> set[str]:
        """The models waiting requests keep from eviction. A draining model's waiters do not
        keep it, nor batch held off a model for a person's room: they wait for its next load."""
        held_off = self.eviction.batch_kept_off(self._queue.coming(), self._short)
        return self._queue.wanted() - self._draining() - held_off

    def _try_claim(self, entry: Entry, state: ModelState) -> bool:
        if self._queue.head() is not entry or entry.claimed or not self._room.fits(state):
            return False
        entry.claimed = True
        self._admission.owe(state, entry.waiters)  # served before it may drain
        if (first := self.line.first(entry.name)) is not None:
            self.demand.loading(entry.name, first.caller.priority)
        return True

    def tick(self) -> None:
        """Evict as many idle models as the queue needs; never blocks."""
        if not self._room.limited:
            return
        coming = self._queue.coming()
        if not coming:
            return
        eviction = self.eviction
        coming, for_batch, resident_too = eviction.wanting(coming)
        # Stopping models count as gone: their room is already on its way. One reading of the
        # GPUs for the whole decision: a victim's memory is freed only once its process exits.
        staying = [s for s in self._pool.workers if s.running and not s.stop_requested]
        snap, yielding = self._room.snapshot(), set[str]()
        try:
            while (short := self._room.short_of(staying, coming, snap)) is not None:
                victim = eviction.pick_victim(
                    short, snap, resident_too=resident_too, for_batch=for_batch
                )
                busy = None if for_batch else eviction.batch_to_yield(short, victim)
                if busy is not None:
                    if resident_too or not eviction.resident(busy):
                        yielding.add(busy.name)  # its last request's release ticks again
                    return  # else the end of its quantum wakes the waiters
                if victim is None:
                    return  # everything is busy or resident: a release or a waiter's wake ticks
                waiting = self.line.waiting(victim.name)  # if it drained or yielded: none fail
                _log.info(
                    "evicting idle model", **victim.named, for_queue=len(coming), waiting=waiting
                )
                self._evict(victim)
                if for_batch:
                    self.demand.given_up(victim.name)
                staying.remove(victim)
        finally:
            self._yielding = yielding

    async def load_now(self, name: str) -> None:
        """``POST /models/load``: bypass the queue, evicting idle models until this one fits."""
        state = self._pool.get(name)
        if state.running:
            raise AlreadyRunning(name)
        if self._pool.holds.held(state.name):
            raise LoadsHeld(name)
        # A decision per victim: each waits for the last one's exit, then reads the GPUs again.
        while (short := self._room.short_for(state, snap := self._room.snapshot())) is not None:
            victim = self.eviction.pick_victim(short, snap)
            if victim is None:
                raise NoRoom(name)
            self._evict(victim)
            await victim.wait_exited()
            if state.running:  # lost a race to another load of it
                raise NoRoom(name)
        self.start(state)

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
        self._room.observe(state)  # after use is when a model holds the most
        if state.in_flight == 0:
            self.tick()

    def unload_expired_now(self) -> list[ModelState]:
        """One pass of Corral's per-model ``ttl``: stop models idle for longer than theirs."""
        expired = self.timers.expired(self._queue.wanted())
        for state in expired:
            _log.info("unloading idle model", **state.named, ttl=self.timers.ttl(state))
            self._pool.request_stop(state)
        return expired

    def bound_copies_now(self) -> None:
        """One pass of the automatic bound on copies (``replicas-max``, copies.py)."""
        load, back = self.copies.bound()
        for copy in load:
            _log.info("loading another copy for the queue", model=copy.name, copy=copy.copy)
            self.start(copy, copies=False)
        for copy in back:
            _log.info("giving back an idle copy", model=copy.name, copy=copy.copy)
            self._pool.request_stop(copy)

    async def unload_expired(self) -> None:
        """Run :meth:`unload_expired_now` and :meth:`bound_copies_now` every half second."""
        while True:
            self.unload_expired_now()
            self.bound_copies_now()
            await anyio.sleep(_TTL_CHECK_SECONDS)
