"""A spare worker: everything imported, no model, until the router hands it one.

``python -m worker --spare`` (docs/protocol.md §1, spare workers). The router keeps one ready so
that a cold start skips the worker's imports (about 0.6 s on 2 busy cores). The imports run on a
thread of their own at a lower priority: Linux niceness belongs to a thread, and an
unprivileged process can never raise it again, so the thread that will serve stays at the
router's priority while the warm-up yields to the models serving now.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import queue
import sys
import threading
from typing import TYPE_CHECKING, Any, NamedTuple

import structlog

from corral.children import lifeline
from corral.children.protocol import (
    EXIT_FAILED,
    EXIT_STOPPED,
    SPARE_STATE,
    LoadCommand,
    StateWriter,
)

if TYPE_CHECKING:
    from litestar import Litestar

__all__ = ["SPARE_FLAG", "Handover", "wait_for_model", "wait_for_next_model"]

SPARE_FLAG = "--spare"
_log = structlog.get_logger("corral.worker")
_NICENESS = 10  # added to the importing thread's: as `nice` does by default
# What serving a model imports: the lifecycle pulls in the app, every API and llama_cpp.
_SERVING_MODULES = ("uvloop", "worker.lifecycle")


class Handover(NamedTuple):
    """The model a spare was handed, and what its warm-up made ready for it."""

    command: LoadCommand  # the worker flags, and the key its router calls it with
    app: Litestar  # the worker's app, built before there was a model


class _WarmUp:
    app: Litestar | None = None


def _import_serving_code(states: StateWriter, made: _WarmUp) -> None:
    # A thread inherits its creator's niceness for good, so nothing imported here may start
    # threads (numpy's OpenBLAS pool would: the worker does not import numpy).
    tid = threading.get_native_id()
    with contextlib.suppress(OSError, AttributeError):  # no per-thread niceness: import anyway
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + _NICENESS)
    for name in _SERVING_MODULES:
        importlib.import_module(name)
    # The app does not depend on the model's settings (they reach it with its state), so it is
    # built here too: after the handover only the model's load is left.
    app_module: Any = importlib.import_module("worker.app")
    made.app = app_module.create_worker_app()
    states.send(SPARE_STATE, {})


def _armed() -> queue.SimpleQueue[LoadCommand | None]:
    """The router's commands to a spare: a load command, or None for the exit command."""
    commands: queue.SimpleQueue[LoadCommand | None] = queue.SimpleQueue()
    if not lifeline.arm(on_exit_command=lambda: commands.put(None), on_load_command=commands.put):
        _log.error("a spare worker is started by a router (CORRAL_ROUTER_PID is not set)")
        sys.exit(EXIT_FAILED)
    return commands


def _load_command(commands: queue.SimpleQueue[LoadCommand | None]) -> LoadCommand:
    """Block until the load command; return it.

    An exit command before it ends the process with code 0; stdin EOF kills it (the lifeline).
    """
    command = commands.get()
    if command is None:
        sys.exit(EXIT_STOPPED)
    return command


def wait_for_model(states: StateWriter) -> Handover:
    """Warm up, then block until the load command; return it and the app."""
    commands = _armed()
    made = _WarmUp()
    warm_up = threading.Thread(
        target=_import_serving_code, args=(states, made), name="spare-warm-up", daemon=True
    )
    warm_up.start()
    command = _load_command(commands)
    warm_up.join()
    if made.app is None:  # the warm-up failed; its traceback is in the log
        sys.exit(EXIT_FAILED)
    return Handover(command, made.app)


def wait_for_next_model(states: StateWriter) -> LoadCommand:
    """A worker that released its model (the release command) is a spare again, with
    everything imported and its app built: it says so and waits for its next model."""
    commands = _armed()  # before the spare state: the load command may follow it at once
    states.send(SPARE_STATE, {})
    return _load_command(commands)
