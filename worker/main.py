"""``python -m worker``: serve one model, alone or as a router's child (docs/protocol.md §1, §6).

Only what every start needs is imported up front; the serving code (Litestar, the APIs,
llama_cpp) is imported when there is a model to serve, so that a spare worker
(:mod:`worker.spare`) can import it at a lower priority before it has one.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING

import structlog

from corral.children.protocol import EXIT_FAILED, EXIT_STOPPED, StateWriter
from corral.children.worker_key import WORKER_KEY_ENV
from corral.logs import configure_logging
from worker.host.cpu_placement import apply_cpu_set, apply_priority
from worker.settings.parse import parse_worker_args
from worker.settings.worker_settings import WorkerSettings
from worker.spare import SPARE_FLAG, wait_for_model, wait_for_next_model

if TYPE_CHECKING:
    from litestar import Litestar

__all__ = ["main"]

_log = structlog.get_logger("corral.worker")


async def _serve(
    settings: WorkerSettings, states: StateWriter, app: Litestar | None, router_key: str
) -> tuple[int, Litestar | None]:
    """Serve the model; the exit code, and the app when the router took the process back."""
    from worker.lifecycle import WorkerLifecycle  # lazily: see the docstring

    lifecycle = WorkerLifecycle(settings, states, app, router_key)
    code = await lifecycle.serve()
    return code, lifecycle.app if lifecycle.released and code == EXIT_STOPPED else None


def _place_threads(settings: WorkerSettings) -> bool:
    """-C/-Cr/--prio on every thread, before the model loads (threads started later inherit
    them); True when the threads' niceness changed."""
    if settings.cpus is not None:
        apply_cpu_set(set(settings.cpus))
    return settings.priority != 0 and apply_priority(settings.priority)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    spare = args == [SPARE_FLAG]
    # The key only the router knows (docs/protocol.md §8): a new worker's comes in its
    # environment, out of which it goes now (nothing this process starts inherits it); a
    # spare's comes with each model.
    router_key = os.environ.pop(WORKER_KEY_ENV, "")
    own_cpus = os.sched_getaffinity(0)  # a released model's -C/-Cr gives them back
    settings = None if spare else parse_worker_args(args)
    states = StateWriter.claim_stdout()
    configure_logging()
    # llama.cpp's own log goes through this logger; below WARNING it narrates every tensor.
    logging.getLogger("llama-cpp-python").setLevel(logging.WARNING)
    app = None
    if settings is None:
        handover = wait_for_model(states)
        settings, app = parse_worker_args(handover.command.argv), handover.app
        router_key = handover.command.key
    import uvloop  # lazily: see the docstring

    while True:
        if not settings.model.is_file():
            _log.error("model file not found", model=str(settings.model))
            sys.exit(EXIT_FAILED)
        reniced = _place_threads(settings)
        # uvloop, as uvicorn itself would pick: on the default asyncio loop every answer from
        # a socket handed to uvicorn stalled ~40 ms (a delayed ACK), /health included.
        code, app = uvloop.run(_serve(settings, states, app, router_key))
        if app is None:
            break
        if reniced:
            # An unprivileged process cannot lower its niceness again: rather than serve the
            # next model at this one's --prio, the process ends (the router copes, §1).
            _log.info("model released; its --prio stays with the process, which ends")
            break
        apply_cpu_set(own_cpus)
        # Released (docs/protocol.md §1): the model is closed, its caches saved; the process
        # is a spare again, for the router's next load.
        _log.info("model released", model=settings.alias)
        command = wait_for_next_model(states)
        settings, router_key = parse_worker_args(command.argv), command.key
    # Everything is saved and closed by now (the KV caches with the model). The interpreter's
    # own teardown (every module, the llama.cpp libraries) takes 50-200 ms, and with
    # --models-max 1 the next model waits for this process to be gone: skip it.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
