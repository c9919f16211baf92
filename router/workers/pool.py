"""The model table and each model's state machine: the only writer of model state.

docs/protocol.md §1 (worker processes), §2 (reloads), §4 (scheduling). One :class:`ModelState`
per catalogue model; the scheduler decides, and asks the pool to start, stop, claim, release and
touch models. A load runs in a task of the pool's own task group (not the request's), so a
client that gives up never leaves a half-started worker behind; requests only wait on changes.
"""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import anyio
import msgspec
import structlog
from anyio.abc import TaskGroup

from corral.children.device_use import DeviceInfo, OutOfMemory, ready_devices
from corral.children.environment import child_environment
from corral.children.protocol import EXIT_FAILED, RESTORE_STATE, StateMessage
from corral.children.worker_key import WORKER_KEY_ENV, new_worker_key
from router.availability.catalogue_diff import carried_over, stale_models
from router.availability.errors import AlreadyRunning, LoadsHeld
from router.availability.load_holds import LoadHolds
from router.capacity.placement import Placement
from router.catalogue.catalogue import Catalogue, CatalogueEntry
from router.observe.events import EventBus
from router.topics import Topic
from router.workers.broadcast import Broadcast
from router.workers.child_supervisor import ChildExit, ChildSupervisor
from router.workers.launcher import WorkerLauncher, worker_argv
from router.workers.lookup import find_model
from router.workers.model_state import ModelFields, ModelState, Status
from router.workers.worker_http import WorkerClient

__all__ = [
    "FAKE_TIMING_SECONDS",
    "WorkerAnswered",
    "WorkerExited",
    "WorkerPool",
]

_log = structlog.get_logger("corral.registry")  # the name logs have always carried
# Upstream's debug aid for deterministic scheduling tests (docs/protocol.md §4): when the
# variable is set, every load and every proxied request is held for this long.
FAKE_TIMING_SECONDS = 2.0 if os.environ.get("LLAMA_SERVER_DEBUG_FAKE_TIMING") else 0.0


@dataclass(frozen=True, slots=True)
class WorkerExited:
    """A model's worker ended, for whatever reason; its state says why."""

    state: ModelState


@dataclass(frozen=True, slots=True)
class WorkerAnswered:
    """A model's worker sent the first bytes of an answer since it started."""

    state: ModelState


class WorkerPool:
    def __init__(
        self,
        catalogue: Catalogue,
        *,
        launcher: WorkerLauncher,
        task_group: TaskGroup,
        node_launcher: Callable[[str | None], WorkerLauncher] | None = None,
        events: EventBus | None = None,
        timeout: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
        check_files: Callable[[CatalogueEntry], str | None] | None = None,
        fake_timing: float = FAKE_TIMING_SECONDS,
    ) -> None:
        self.events = events or EventBus()
        # Upstream's debug hold (FAKE_TIMING_SECONDS), or 0: upstream's router mode has it,
        # a single-model llama-server does not.
        self.fake_timing = fake_timing
        self.exited: Topic[WorkerExited] = Topic()  # each worker's exit, after the bookkeeping
        self.restores: Topic[dict[str, Any]] = Topic()  # workers' restore notes, undecoded
        self.answered: Topic[WorkerAnswered] = Topic()  # the first answer bytes since a start
        self.changed = Broadcast()
        self.holds = LoadHolds(self.changed)  # models whose files a removal is deleting
        self._timeout = timeout
        self._clock = clock
        # What is wrong with a model's files, asked before its worker starts (None: no check).
        self._check_files = check_files
        self._launcher = launcher
        # With ``--cluster``, the launcher of the node a placement names (router/cluster/): a
        # worker there is supervised through the same interface as one spawned here.
        self._node_launcher = node_launcher
        self._tasks = task_group
        # Views handed out stay valid after a reload replaced them (a request may still hold one).
        self._fields: weakref.WeakKeyDictionary[ModelState, ModelFields] = (
            weakref.WeakKeyDictionary()
        )
        self._catalogue = catalogue
        self._models = {name: self._new_state(entry) for name, entry in catalogue.entries.items()}
        # A model's further worker copies (``replicas``), which share its entry; lookups by
        # name find the first, router/scheduling/copies.py chooses among them per request.
        self._extra = {name: self._extra_copies(entry) for name, entry in catalogue.entries.items()}
        # The GPUs the latest loaded worker saw (ggml's devices, any back-end), for the inventory.
        self.reported_devices: list[DeviceInfo] = []

    def _new_state(self, entry: CatalogueEntry, copy: int = 0) -> ModelState:
        fields = ModelFields(entry, worker_argv(entry), copy=copy)
        state = ModelState(fields)
        self._fields[state] = fields
        return state

    def _extra_copies(self, entry: CatalogueEntry) -> tuple[ModelState, ...]:
        return tuple(self._new_state(entry, copy) for copy in range(1, entry.most_copies))

    def _writable(self, state: ModelState) -> ModelFields:
        return self._fields[state]

    @property
    def catalogue(self) -> Catalogue:
        return self._catalogue

    @property
    def models(self) -> Mapping[str, ModelState]:
        return MappingProxyType(self._models)

    @property
    def workers(self) -> list[ModelState]:
        """Every model's every copy: what runs, counts toward the limits and may be evicted."""
        return [copy for name in self._models for copy in self.copies(name)]

    def copies(self, name: str) -> tuple[ModelState, ...]:
        """The copies of the model of this canonical name, the first (:meth:`get`'s) first."""
        return (self._models[name], *self._extra[name])

    def get(self, name: str) -> ModelState:
        """A model by name or alias; raises :class:`~router.availability.errors.ModelNotFound`."""
        return find_model(self._catalogue, self._models, name)

    async def reload(self, catalogue: Catalogue) -> None:
        """Adopt a new catalogue (docs/protocol.md §2); see
        :mod:`router.availability.catalogue_diff`."""
        async with anyio.create_task_group() as group:
            for state in stale_models(self.workers, catalogue):
                group.start_soon(self.stop, state)
        kept = carried_over(self._models, catalogue)
        models: dict[str, ModelState] = {}
        extra: dict[str, tuple[ModelState, ...]] = {}
        for name, entry in catalogue.entries.items():
            previous = kept.get(name)
            if previous is None:
                models[name], extra[name] = self._new_state(entry), self._extra_copies(entry)
                continue
            models[name], extra[name] = previous, self._extra[name]
            for copy in self.copies(name):
                if not copy.running:  # a reload clears the failed mark
                    fields = self._writable(copy)
                    fields.exit_code = fields.error = fields.fault = fields.fault_message = None
        self._catalogue, self._models, self._extra = catalogue, models, extra
        self.events.publish("*", "models_reload")
        self.changed.notify()

    # --- what the scheduler and the proxy ask for ---------------------------------------------

    def claim(self, state: ModelState) -> bool:
        """Count a request on a model that serves now; False (nothing counted) if it does not.

        A claimed model is never evicted until it is released.
        """
        if not state.serving:
            return False
        fields = self._writable(state)
        if fields.in_flight == 0:  # an idle model owed no progress: the stall clock starts now
            fields.last_progress = self._clock()
        fields.in_flight += 1
        return True

    def release(self, state: ModelState) -> None:
        self._writable(state).in_flight -= 1

    def touch(self, state: ModelState) -> None:
        """The model was just used: least recently used is evicted first."""
        self._writable(state).last_used = self._clock()

    def note_progress(self, state: ModelState, at: float | None = None) -> None:
        """The worker showed it is working (answer bytes, a liveness probe answered).

        ``at`` is when, if earlier than now: a probe tells when the engine last moved.
        """
        fields = self._writable(state)
        fields.last_progress = max(fields.last_progress, self._clock() if at is None else at)

    def note_answer(self, state: ModelState) -> None:
        """Bytes of an answer came from the worker: progress, and the first tells
        :attr:`answered` that its load is over for the clients too (a spare may be replaced)."""
        self.note_progress(state)
        fields = self._writable(state)
        if not fields.answered:
            fields.answered = True
            self.answered.publish(WorkerAnswered(state))

    def keep_alive(self, state: ModelState, seconds: float) -> None:
        """How long the model stays loaded once idle, until its worker exits (overrides its
        ``ttl``; ``inf``: for ever; 0: it unloads once its requests are answered)."""
        self._writable(state).keep_alive = seconds

    def note_memory(self, state: ModelState, measured: int) -> None:
        """Remember the most a model was seen to hold: what it is expected to need next time."""
        fields = self._writable(state)
        fields.peak_memory = max(fields.peak_memory, measured)

    def start(self, state: ModelState, placement: Placement | None = None) -> None:
        """Spawn the worker; returns at once, the load goes on in the pool's task group.

        ``placement``: the GPUs the scheduler chose, passed on as the worker's ``--device``.
        """
        if state.running:
            raise AlreadyRunning(state.name)
        if self.holds.held(state.name):
            raise LoadsHeld(state.name)
        fields = self._writable(state)
        fields.placement = placement
        fields.args = worker_argv(state.entry) + (placement.worker_args() if placement else [])
        fields.device_use = []
        fields.out_of_memory = None
        started = self._clock()
        # A new key for each start: one a stopped worker had is worth nothing (§8).
        key = new_worker_key()
        launcher = self._launcher
        if self._node_launcher is not None:
            launcher = self._node_launcher(placement.node if placement is not None else None)
        supervisor = ChildSupervisor(
            launcher,
            fields.args,
            {**child_environment(), WORKER_KEY_ENV: key},
            name=state.name,
            source="worker",
            on_state=lambda message: self._on_state(state, message, started, key),
            stop_timeout=state.entry.stop_timeout,
            check=self._files_check(state.entry),
        )
        fields.exited = anyio.Event()
        fields.supervisor = supervisor
        fields.stop_requested = False
        fields.exit_code = fields.error = fields.meta = fields.progress = None
        fields.fault = fields.fault_message = None
        fields.answered = False
        fields.last_used = fields.last_progress = started
        self._set_status(state, Status.LOADING)
        self.events.publish(state.name, "model_status", {"status": "loading"})
        self._tasks.start_soon(self._run_worker, state, supervisor)

    def _files_check(self, entry: CatalogueEntry) -> Callable[[], str | None] | None:
        check = self._check_files
        return None if check is None else lambda: check(entry)

    def request_stop(self, state: ModelState) -> None:
        """Mark the model stopping now (the scheduler counts on that); stop it in the background."""
        if state.running and not state.stop_requested:
            self._writable(state).stop_requested = True
            self.changed.notify()
            self._tasks.start_soon(self.stop, state)

    def kill_faulty(self, state: ModelState, fault: str, message: str) -> None:
        """End a worker that stopped making progress: a failure, unlike :meth:`request_stop`.

        Its in-flight answers are cut at once (the proxy tells their clients ``message``), then
        the process gets SIGTERM and, after its stop timeout, SIGKILL. The model then shows
        failed with ``fault`` as its reason and loads again on the next request.
        """
        if not state.running or state.stop_requested:
            return
        fields = self._writable(state)
        fields.fault, fields.fault_message, fields.stop_requested = fault, message, True
        _log.error("killing a worker that stopped making progress", **state.named, fault=fault)
        if fields.client is not None:
            fields.client.abort()
        self.changed.notify()
        if fields.supervisor is not None:
            self._tasks.start_soon(fields.supervisor.terminate)

    async def stop(self, state: ModelState) -> None:
        """Stop the worker by escalation (see :meth:`ChildSupervisor.stop`) and wait for it.

        A model still loading is killed at once: there is nothing to finish.
        """
        if not state.running:
            return
        fields = self._writable(state)
        fields.stop_requested = True
        self.changed.notify()
        exited, supervisor = fields.exited, fields.supervisor
        if supervisor is not None:
            await supervisor.stop(at_once=state.status is Status.LOADING)
        await exited.wait()  # the pool's own bookkeeping of the exit is done too

    async def stop_all(self) -> None:
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for state in self.workers:
                    group.start_soon(self.stop, state)

    # --- the state machine ---------------------------------------------------------------------

    def _set_status(self, state: ModelState, status: Status, **data: Any) -> None:
        self._writable(state).status = status
        self.events.publish(state.name, "status_change", {"status": status.value, **data})
        self.changed.notify()

    async def _run_worker(self, state: ModelState, supervisor: ChildSupervisor) -> None:
        _log.info("starting worker", **state.named)
        if self.fake_timing:
            await anyio.sleep(self.fake_timing)
        self._settle_exit(state, await supervisor.run())

    def _on_state(self, state: ModelState, message: StateMessage, started: float, key: str) -> None:
        fields = self._writable(state)
        fields.last_progress = self._clock()  # any state message shows the worker is alive
        if message.state == "loading":
            fields.progress = message.payload
            self._set_status(state, Status.LOADING, progress=message.payload)
        elif message.state == "ready":
            info: dict[str, Any] = {}
            if message.payload:  # a wake from sleep sends {}
                info = dict(message.payload)
                host, port = info.pop("host", "127.0.0.1"), info.pop("port")
                fields.meta = info.get("meta", {})
                self._note_devices(state, info)
                fields.client = WorkerClient(str(host), int(port), self._timeout, key=key)
                fields.load_seconds = self._clock() - started
                fields.loads += 1
                fields.ready_at = self._clock()
                fields.load_seconds_total += fields.load_seconds
                # Its pid (on its node, with --cluster) tells a model's copies apart.
                pid = state.process.pid if state.process is not None else None
                seconds = round(fields.load_seconds, 3)
                _log.info("model loaded", **state.named, pid=pid, seconds=seconds)
            if fields.supervisor is not None:
                fields.supervisor.forget_last_words()
            fields.failures = 0
            self._set_status(state, Status.LOADED, **({"info": info} if info else {}))
        elif message.state == "sleeping":
            self._set_status(state, Status.SLEEPING)
        elif message.state == RESTORE_STATE:  # a request's, not the model's (protocol.md §1)
            self.restores.publish(message.payload)
        else:
            _log.warning("unknown state from worker", model=state.name, state=message.state)

    def _note_devices(self, state: ModelState, info: dict[str, Any]) -> None:
        """Where the loaded model's bytes went; the most it took on the GPUs is remembered."""
        fields = self._writable(state)
        try:
            uses, gpus = ready_devices(info)
        except msgspec.ValidationError as error:  # a worker of another version: no figures
            _log.warning("unreadable device report", model=fields.entry.name, error=str(error))
            return
        fields.device_use = uses
        on_gpus = sum(
            u.model_bytes + u.context_bytes + u.compute_bytes for u in uses if u.name != "CPU"
        )
        fields.gpu_peak = max(fields.gpu_peak, on_gpus)
        if gpus:
            self.reported_devices = gpus

    def _settle_exit(self, state: ModelState, ended: ChildExit) -> None:
        fields = self._writable(state)
        returncode = ended.returncode
        reason = ended.reason
        if ended.launch_error is not None:
            reason = f"cannot start worker: {ended.launch_error}"
        fault = fields.fault
        expected = fields.stop_requested and fault is None
        fields.supervisor = None
        fields.keep_alive = None  # a request's keep-alive lasts as long as the worker it kept
        if fault is not None:  # killed by the router for a fault: a failure whatever its code
            fields.exit_code = ended.code or EXIT_FAILED
            fields.error = reason = f"{fields.fault_message} ({reason})"
        else:
            fields.exit_code = None if expected else ended.code or None
            fields.error = None if expected or not returncode else reason
        fields.device_use = []
        fields.bad_file = ended.refused
        if fields.exit_code:
            fields.out_of_memory = OutOfMemory.parse(reason or "")
            # A refused file is checked again at the next request, at no cost (the verdict is
            # kept while the file is unchanged): no backoff keeps its error from that request.
            fields.failures = 0 if ended.refused else fields.failures + 1
            fields.failures_total += 1
            fields.failed_at = self._clock()
        if fields.client is not None:
            if expected:
                self._tasks.start_soon(fields.client.aclose)
            else:  # its answers end now, even where no socket tells (a dead node: scaling.md)
                fields.client.abort()
            fields.client = None
        fields.exited.set()
        self.exited.publish(WorkerExited(state))
        # The reason travels with the event (beyond upstream), so a client need not refetch.
        failure = {"error": fields.error} if fields.exit_code and fields.error else {}
        if fields.exit_code:  # as /models says it: why it failed
            failure["reason"] = state.failure_reason
        self._set_status(state, Status.UNLOADED, exit_code=fields.exit_code or 0, **failure)
        if ended.refused:  # no worker ran: say what is wrong with the file, once
            _log.error("model file is unusable", **state.named, error=reason)
            return
        log = _log.info if expected or not returncode else _log.error
        log("worker exited", **state.named, code=returncode, reason=reason)
