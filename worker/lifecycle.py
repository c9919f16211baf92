"""One worker's life: bind, load (reporting progress), serve, sleep and wake, stop.

Order matters: the listening socket is bound before the model loads, so ``/health`` answers 503
during the load, and the port reported in ``ready`` is one we already own (no probe-then-bind).
Every state change goes to the router over the child protocol (docs/protocol.md §1).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import msgspec
import structlog
import uvicorn
from litestar import Litestar

from corral.children import lifeline
from corral.children.protocol import EXIT_FAILED, EXIT_STOPPED, StateWriter
from corral.http.header_spelling import SpelledHeadersProtocol
from corral.http.sockets import WORKER_KEEP_ALIVE_SECONDS, Listen, bind_hosts
from corral.options.table import option_spec
from worker.app import bind_worker_state, create_worker_app
from worker.engine.engine import Engine
from worker.engine.model import LoadedModel
from worker.host.access import with_access_rules
from worker.host.cache_scope import with_cache_scope
from worker.host.http_server import PromptServer
from worker.host.restore_notes import with_restore_notes
from worker.host.trace_context import with_trace_context
from worker.settings.worker_settings import WorkerSettings
from worker.state import WorkerState

__all__ = ["LoadProgress", "WorkerLifecycle"]

_log = structlog.get_logger("corral.worker")
_STAGES = ["text_model"]
_PROGRESS_INTERVAL = 0.2  # seconds between two load-progress reports, as upstream


class LoadProgress:
    """Load progress samples, thinned for the router: llama.cpp reports hundreds per load.

    The first and last samples always go out, the rest at most every 200 ms, as upstream.
    """

    def __init__(
        self, report: Callable[[float], None], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._report = report
        self._clock = clock
        self._last_report = 0.0
        self._last_value = -1.0

    def restart(self) -> None:
        """A new load begins (a wake-up): its first sample goes out even if it repeats one."""
        self._last_value = -1.0

    def __call__(self, value: float) -> None:
        now = self._clock()
        if value != self._last_value and (
            value in (0.0, 1.0) or now - self._last_report >= _PROGRESS_INTERVAL
        ):
            self._last_report, self._last_value = now, value
            self._report(value)


class WorkerLifecycle:
    """Create it on the event loop that will serve; :meth:`serve` returns the exit code."""

    def __init__(
        self,
        settings: WorkerSettings,
        states: StateWriter,
        app: Litestar | None = None,
        router_key: str = "",
    ) -> None:
        """``app``: one :func:`create_worker_app` built ahead (a spare's), else built here.
        ``router_key``: the key every request must carry (its router's), or "" for none."""
        self.settings = settings
        self._states = states
        self._loop = asyncio.get_running_loop()
        # A comma list of addresses, as llama-server's --host; the router gives one.
        self._sockets = bind_hosts(Listen(settings.host, settings.port))
        self.host: str = self._sockets[0].getsockname()[0]
        self.port: int = self._sockets[0].getsockname()[1]
        self._engine = Engine()
        self.state = WorkerState(settings=settings, engine=self._engine)
        self.app = app or create_worker_app()
        bind_worker_state(self.app, self.state)
        self._server = PromptServer(
            uvicorn.Config(
                with_access_rules(
                    with_restore_notes(with_cache_scope(with_trace_context(self.app)), states),
                    settings.api_keys,
                    settings.cors_origins,
                    settings.allowed_hosts,
                    self._sockets,
                    router_key=router_key,
                ),
                log_config=None,
                lifespan="off",
                ws="none",  # no websocket routes; "auto" would import websockets (2 MiB)
                http=SpelledHeadersProtocol,
                timeout_graceful_shutdown=5,
                # The router's idle connections expire first, so none is reused as the worker
                # closes it.
                timeout_keep_alive=WORKER_KEEP_ALIVE_SECONDS,
            )
        )
        self._exit_code = EXIT_STOPPED
        # The release command: once stopped, the process waits for its next model. An exit
        # command wins, whichever came first.
        self.released = False
        self._exit_commanded = False
        self._progress = LoadProgress(self._report_loading)

    async def serve(self) -> int:
        """Load on the engine thread while serving; return once the server has stopped."""
        settings = self.settings
        lifeline.arm(
            on_exit_command=self._exit_command,
            on_release_command=self._release_command,
            on_threads_command=self._engine.want_threads,
        )
        for name, value in settings.ignored.items():
            reason = option_spec(name).no_effect
            _log.warning(
                "option accepted but not supported yet", option=name, value=value, reason=reason
            )
        for flag in settings.no_effect_flags:
            _log.warning("llama-server flag has no effect in a worker", flag=flag)
        _log.info("listening", host=self.host, port=self.port, model=str(settings.model))
        self._engine.start(
            self._load,
            sleep_after=settings.sleep_idle_seconds,
            on_sleep=self._on_sleep,
            wake=self._wake,
        )
        sweeper = asyncio.create_task(self.state.sessions.sweep_forever())
        try:
            await self._server.serve(sockets=self._sockets)
        finally:
            sweeper.cancel()
            self._engine.stop()
        return self._exit_code

    def stop(self, code: int) -> None:
        """Stop serving (event loop only); the first non-zero code is the exit code."""
        self._exit_code = self._exit_code or code
        self._server.request_exit()

    def _report_loading(self, value: float) -> None:
        self._states.send("loading", {"stages": _STAGES, "current": _STAGES[0], "value": value})

    def _load(self) -> LoadedModel | None:  # on the engine thread
        self._progress(0.0)
        try:
            model = LoadedModel(self.settings, self._progress)
        except Exception as exc:
            _log.error("failed to load model", model=str(self.settings.model), error=str(exc))
            self._loop.call_soon_threadsafe(self.stop, EXIT_FAILED)
            return None
        self._progress(1.0)
        self._loop.call_soon_threadsafe(self._loaded, model)
        return model

    def _loaded(self, model: LoadedModel) -> None:
        self.state.model = model
        # docs/protocol.md §1, devices in ready: the GPUs as the load left them.
        gpus = msgspec.to_builtins(model.gpu_devices)
        self._states.send(
            "ready", {**model.info(), "host": self.host, "port": self.port, "gpu_devices": gpus}
        )
        _log.info("model loaded", model=self.settings.alias, port=self.port)

    def _on_sleep(self) -> None:  # on the engine thread
        self._states.send("sleeping", {})
        _log.info("model asleep: weights freed", idle_seconds=self.settings.sleep_idle_seconds)

    def _wake(self, model: LoadedModel) -> None:  # on the engine thread
        self._progress.restart()
        self._progress(0.0)
        model.wake(self._progress)
        self._progress(1.0)
        self._states.send("ready", {})  # upstream's wake-up: an empty ready, the info is unchanged
        _log.info("model awake")

    def _exit_command(self) -> None:  # on the lifeline thread
        self._loop.call_soon_threadsafe(self._stop_by_router, False)

    def _release_command(self) -> None:  # on the lifeline thread
        self._loop.call_soon_threadsafe(self._stop_by_router, True)

    def _stop_by_router(self, release: bool) -> None:
        self._exit_commanded = self._exit_commanded or not release
        self.released = not self._exit_commanded
        self.stop(EXIT_STOPPED)
