"""``python -m worker``: serve one model, alone or as a router's child (docs/protocol.md §1, §6).

Order matters: the listening socket is bound before the model loads, so ``/health`` answers 503
during the load, and the port reported in ``ready`` is one we already own (no probe-then-bind).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time

import structlog
import uvicorn
import uvloop

from corral.children import lifeline
from corral.children.protocol import StateWriter
from corral.logs import configure_logging
from corral.sockets import WORKER_KEEP_ALIVE_SECONDS, bind_tcp
from worker.app import create_worker_app
from worker.engine import Engine
from worker.model import LoadedModel
from worker.settings import WorkerSettings, parse_worker_args
from worker.state import WorkerState

__all__ = ["main"]

_log = structlog.get_logger("corral.worker")
_STAGES = ["text_model"]


async def _serve(settings: WorkerSettings, states: StateWriter) -> int:
    loop = asyncio.get_running_loop()
    sock = bind_tcp(settings.host, settings.port)
    port: int = sock.getsockname()[1]
    engine = Engine()
    state = WorkerState(settings=settings, engine=engine)
    server = uvicorn.Server(
        uvicorn.Config(
            create_worker_app(state),
            log_config=None,
            lifespan="off",
            timeout_graceful_shutdown=5,
            # The router's idle connections expire first, so none is reused as the worker closes it.
            timeout_keep_alive=WORKER_KEEP_ALIVE_SECONDS,
        )
    )
    exit_code = 0

    def stop(code: int) -> None:
        nonlocal exit_code
        exit_code = exit_code or code
        server.should_exit = True

    def loaded(model: LoadedModel) -> None:
        state.model = model
        states.send("ready", {**model.info(), "host": settings.host, "port": port})
        _log.info("model loaded", model=settings.alias, port=port)

    last_report, last_value = 0.0, -1.0

    def progress(value: float) -> None:
        # The first and last samples always go out; the rest at most every 200 ms, as upstream.
        nonlocal last_report, last_value
        now = time.monotonic()
        if value != last_value and (value in (0.0, 1.0) or now - last_report >= 0.2):
            last_report, last_value = now, value
            states.send("loading", {"stages": _STAGES, "current": _STAGES[0], "value": value})

    def load() -> LoadedModel | None:
        progress(0.0)
        try:
            model = LoadedModel(settings, progress)
        except Exception as exc:
            _log.error("failed to load model", model=str(settings.model), error=str(exc))
            loop.call_soon_threadsafe(stop, 1)
            return None
        progress(1.0)
        loop.call_soon_threadsafe(loaded, model)
        return model

    def on_sleep() -> None:
        states.send("sleeping", {})
        _log.info("model asleep: weights freed", idle_seconds=settings.sleep_idle_seconds)

    def wake(model: LoadedModel) -> None:
        nonlocal last_value
        last_value = -1.0
        progress(0.0)
        model.wake(progress)
        progress(1.0)
        states.send("ready", {})  # upstream's wake-up: an empty ready, the info is unchanged
        _log.info("model awake")

    def exit_command() -> None:  # called on the lifeline thread
        loop.call_soon_threadsafe(stop, 0)

    lifeline.arm(on_exit_command=exit_command)
    for name, value in settings.ignored.items():
        _log.warning("option accepted but not supported yet", option=name, value=value)
    _log.info("listening", host=settings.host, port=port, model=str(settings.model))
    engine.start(load, sleep_after=settings.sleep_idle_seconds, on_sleep=on_sleep, wake=wake)
    sweeper = asyncio.create_task(state.sessions.sweep_forever())
    try:
        await server.serve(sockets=[sock])
    finally:
        sweeper.cancel()
        engine.stop()
    return exit_code


def main(argv: list[str] | None = None) -> None:
    settings = parse_worker_args(argv)
    states = StateWriter.claim_stdout()
    configure_logging()
    # llama.cpp's own log goes through this logger; below WARNING it narrates every tensor.
    logging.getLogger("llama-cpp-python").setLevel(logging.WARNING)
    if not settings.model.is_file():
        _log.error("model file not found", model=str(settings.model))
        sys.exit(1)
    # uvloop, as uvicorn itself would pick: on the default asyncio loop every answer from a
    # socket handed to uvicorn stalled ~40 ms (a delayed ACK), /health included.
    sys.exit(uvloop.run(_serve(settings, states)))
