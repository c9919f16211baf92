"""``python -m worker``: serve one model, alone or as a router's child (docs/protocol.md §1, §6)."""

from __future__ import annotations

import logging
import sys

import structlog
import uvloop

from corral.children.protocol import EXIT_FAILED, StateWriter
from corral.logs import configure_logging
from worker.lifecycle import WorkerLifecycle
from worker.settings import WorkerSettings, parse_worker_args

__all__ = ["main"]

_log = structlog.get_logger("corral.worker")


async def _serve(settings: WorkerSettings, states: StateWriter) -> int:
    return await WorkerLifecycle(settings, states).serve()


def main(argv: list[str] | None = None) -> None:
    settings = parse_worker_args(argv)
    states = StateWriter.claim_stdout()
    configure_logging()
    # llama.cpp's own log goes through this logger; below WARNING it narrates every tensor.
    logging.getLogger("llama-cpp-python").setLevel(logging.WARNING)
    if not settings.model.is_file():
        _log.error("model file not found", model=str(settings.model))
        sys.exit(EXIT_FAILED)
    # uvloop, as uvicorn itself would pick: on the default asyncio loop every answer from a
    # socket handed to uvicorn stalled ~40 ms (a delayed ACK), /health included.
    sys.exit(uvloop.run(_serve(settings, states)))
