"""Every model's runtime state, and the supervision of its worker process (SPEC §1, §4).

One :class:`ModelState` per catalogue model. A load runs in a task of the registry's own task
group (not the request's), so a client that gives up never leaves a half-started worker behind;
requests only wait on the load's :class:`anyio.Event`.
"""

from __future__ import annotations

import enum
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup

from corral.children.environment import child_environment
from corral.children.protocol import ChildLine, LogLine, MalformedLine, StateMessage
from corral.errors import ApiError
from router.catalogue import Catalogue, CatalogueEntry
from router.child_logs import relay_log_line
from router.events import EventBus
from router.launcher import ChildProcess, WorkerLauncher
from router.worker_http import WorkerClient

__all__ = ["FAKE_TIMING_SECONDS", "Broadcast", "ModelRegistry", "ModelState", "Status"]

_log = structlog.get_logger("corral.registry")
# Never handed to a child: workers serve loopback only, with no key (SPEC §8).
# Upstream's debug aid for deterministic scheduling tests (SPEC §4): when the variable is set,
# every load and every proxied request is held for this long.
FAKE_TIMING_SECONDS = 2.0 if os.environ.get("LLAMA_SERVER_DEBUG_FAKE_TIMING") else 0.0


class Broadcast:
    """Wakes every waiter when something changed; waiters re-check their own condition."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = anyio.Event()

    async def wait(self) -> None:
        await self._event.wait()


class Status(enum.StrEnum):
    UNLOADED = "unloaded"
    LOADING = "loading"
    LOADED = "loaded"
    SLEEPING = "sleeping"


@dataclass
class ModelState:
    entry: CatalogueEntry
    args: list[str]
    status: Status = Status.UNLOADED
    process: ChildProcess | None = None
    client: WorkerClient | None = None
    meta: dict[str, Any] | None = None
    progress: dict[str, Any] | None = None
    exit_code: int | None = None
    error: str | None = None
    failures: int = 0  # consecutive failed loads, for the retry backoff
    failed_at: float = 0.0
    stop_requested: bool = False
    load_seconds: float = 0.0
    loads: int = 0
    load_seconds_total: float = 0.0
    failures_total: int = 0
    in_flight: int = 0
    last_used: float = 0.0
    peak_memory: int = 0  # the most its worker was seen to hold, for the memory budget
    loaded: anyio.Event = field(default_factory=anyio.Event)  # set when a load ends, either way
    exited: anyio.Event = field(default_factory=anyio.Event)
    last_log: deque[str] = field(default_factory=lambda: deque(maxlen=1))

    @property
    def failed(self) -> bool:
        return self.status is Status.UNLOADED and bool(self.exit_code)

    @property
    def running(self) -> bool:
        return self.status is not Status.UNLOADED


def _exit_code(returncode: int) -> int:
    # A signal death is reported the shell's way (128 + signal) rather than negative.
    return 128 - returncode if returncode < 0 else returncode


def _exit_reason(returncode: int) -> str:
    if returncode < 0:
        return f"killed by {signal.Signals(-returncode).name}"
    return f"exited with code {returncode}"


class ModelRegistry:
    def __init__(
        self,
        catalogue: Catalogue,
        *,
        launcher: WorkerLauncher,
        task_group: TaskGroup,
        events: EventBus | None = None,
        timeout: float = 3600.0,
    ) -> None:
        self.events = events or EventBus()
        self._timeout = timeout
        self.exit_listeners: list[Callable[[str], None]] = []  # called with a model's name
        self.changed = Broadcast()
        self._launcher = launcher
        self._tasks = task_group
        self.catalogue = catalogue
        self.models = {
            name: ModelState(entry, _argv(entry)) for name, entry in catalogue.entries.items()
        }

    async def reload(self, catalogue: Catalogue) -> None:
        """Adopt a new catalogue (SPEC §2).

        Running models whose entry changed or vanished are stopped first; every other running
        model keeps running; new models appear unloaded.
        """
        stale = [
            state
            for name, state in self.models.items()
            if state.running and catalogue.entries.get(name) != state.entry
        ]
        async with anyio.create_task_group() as group:
            for state in stale:
                group.start_soon(self.stop, state)
        models: dict[str, ModelState] = {}
        for name, entry in catalogue.entries.items():
            kept = self.models.get(name)
            if kept is None or kept.entry != entry:
                kept = ModelState(entry, _argv(entry))
            elif not kept.running:
                kept.exit_code = kept.error = None  # a reload clears the failed mark
            models[name] = kept
        self.catalogue, self.models = catalogue, models
        self.events.publish("*", "models_reload")
        self.changed.notify()

    def _set_status(self, state: ModelState, status: Status, **data: Any) -> None:
        state.status = status
        self.events.publish(state.entry.name, "status_change", {"status": status.value, **data})
        self.changed.notify()

    def get(self, name: str) -> ModelState:
        """A model by name or alias; unknown names are a 404 on every route (SPEC §3)."""
        entry = self.catalogue.resolve(name)
        if entry is None:
            raise ApiError(404, f"model '{name}' not found")
        return self.models[entry.name]

    def start(self, state: ModelState) -> None:
        """Spawn the worker; returns at once, the load goes on in the registry's task group."""
        if state.running:
            raise ApiError(400, "model is already running")
        state.loaded, state.exited = anyio.Event(), anyio.Event()
        state.stop_requested = False
        state.exit_code = state.error = state.meta = state.progress = None
        state.last_used = time.monotonic()
        self._set_status(state, Status.LOADING)
        self.events.publish(state.entry.name, "model_status", {"status": "loading"})
        self._tasks.start_soon(self._run_worker, state)

    async def _run_worker(self, state: ModelState) -> None:
        # This task lives in the router's lifespan task group: an exception escaping it would stop
        # the whole router, so every failure ends here as this one model's failure.
        try:
            await self._supervise(state)
        except Exception as exc:
            _log.exception("worker supervision failed", model=state.entry.name)
            if state.process is not None:
                state.process.signal_group(signal.SIGKILL)
            self._settle_exit(state, 1, f"internal error supervising the worker: {exc}")

    async def _supervise(self, state: ModelState) -> None:
        name = state.entry.name
        env = child_environment()
        _log.info("starting worker", model=name)
        started = time.monotonic()
        if FAKE_TIMING_SECONDS:
            await anyio.sleep(FAKE_TIMING_SECONDS)
        if state.stop_requested:
            self._settle_exit(state, 0, "stopped before it started")
            return
        try:
            state.process = process = await self._launcher.launch(state.args, env)
        except OSError as exc:
            self._settle_exit(state, 127, f"cannot start worker: {exc}")
            return
        if state.stop_requested:  # stopped while spawning: nothing to finish
            process.signal_group(signal.SIGKILL)
        returncode = await process.pump(lambda line: self._on_line(state, line, started))
        reason = _exit_reason(returncode)
        if state.last_log:
            reason = f"{reason}: {state.last_log[0]}"
        self._settle_exit(state, returncode, reason)

    def _on_line(self, state: ModelState, line: ChildLine, started: float) -> None:
        name = state.entry.name
        if isinstance(line, StateMessage):
            self._on_state(state, line, started)
        elif isinstance(line, LogLine):
            relay_log_line(line.text, model=name, source="worker", last_error=state.last_log)
        elif isinstance(line, MalformedLine):
            _log.warning("malformed state line from worker", model=name, reason=line.reason)

    def _on_state(self, state: ModelState, message: StateMessage, started: float) -> None:
        name = state.entry.name
        if message.state == "loading":
            state.progress = message.payload
            self._set_status(state, Status.LOADING, progress=message.payload)
        elif message.state == "ready":
            info: dict[str, Any] = {}
            if message.payload:  # a wake from sleep sends {}
                info = dict(message.payload)
                host, port = info.pop("host", "127.0.0.1"), info.pop("port")
                state.meta = info.get("meta", {})
                state.client = WorkerClient(str(host), int(port), self._timeout)
                state.load_seconds = time.monotonic() - started
                state.loads += 1
                state.load_seconds_total += state.load_seconds
                _log.info("model loaded", model=name, seconds=round(state.load_seconds, 3))
            state.last_log.clear()
            state.failures = 0
            state.loaded.set()
            self._set_status(state, Status.LOADED, **({"info": info} if info else {}))
        elif message.state == "sleeping":
            self._set_status(state, Status.SLEEPING)
        else:
            _log.warning("unknown state from worker", model=name, state=message.state)

    def _settle_exit(self, state: ModelState, returncode: int, reason: str) -> None:
        expected = state.stop_requested
        state.process = None
        state.exit_code = None if expected else _exit_code(returncode) or None
        state.error = None if expected or not returncode else reason
        if state.exit_code:
            state.failures += 1
            state.failures_total += 1
            state.failed_at = time.monotonic()
        if state.client is not None:
            self._tasks.start_soon(state.client.aclose)
            state.client = None
        state.loaded.set()
        state.exited.set()
        for listener in self.exit_listeners:
            listener(state.entry.name)
        # The reason travels with the event (beyond upstream), so a client need not refetch.
        failure = {"error": state.error} if state.exit_code and state.error else {}
        self._set_status(state, Status.UNLOADED, exit_code=state.exit_code or 0, **failure)
        log = _log.info if expected or not returncode else _log.error
        log("worker exited", model=state.entry.name, code=returncode, reason=reason)

    def request_stop(self, state: ModelState) -> None:
        """Mark the model stopping now (the scheduler counts on that); stop it in the background."""
        if state.running and not state.stop_requested:
            state.stop_requested = True
            self.changed.notify()
            self._tasks.start_soon(self.stop, state)

    async def stop(self, state: ModelState) -> None:
        """Exit command; SIGTERM then SIGKILL to the group after the stop timeout.

        A model still loading is killed at once: there is nothing to finish.
        """
        if not state.running:
            return
        state.stop_requested = True
        self.changed.notify()
        exited = state.exited
        process = state.process
        if process is None:  # not spawned yet: the loading task sees stop_requested and ends it
            await exited.wait()
            return
        if state.status is Status.LOADING:
            process.signal_group(signal.SIGKILL)
        else:
            await process.send_exit()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with anyio.move_on_after(state.entry.stop_timeout):
                await exited.wait()
                return
            _log.warning("worker did not stop in time", model=state.entry.name, signal=sig.name)
            process.signal_group(sig)
        await exited.wait()

    async def stop_all(self) -> None:
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for state in self.models.values():
                    group.start_soon(self.stop, state)


def _argv(entry: CatalogueEntry) -> list[str]:
    return [
        sys.executable, "-m", "worker", "--model", str(entry.path), "--alias", entry.name,
        "--host", "127.0.0.1", "--port", "0", *entry.worker_args(),
    ]  # fmt: skip
