"""One logging pipeline for the router and its children: structlog over the stdlib.

Everything goes to stderr (a child's stdout carries the protocol). JSON when stderr is not a TTY,
so the router can re-read a child's records and tag them with the model.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import msgspec
import structlog

__all__ = ["configure_logging", "verbosity_level"]


def verbosity_level(verbosity: int) -> str:
    """llama-server's ``-lv`` threshold as a logging level: 1 errors, 2 warnings, 3 info (the
    default), 4 and more debug (common/log.h's levels; 0, its generic output, is no level)."""
    levels = {0: "ERROR", 1: "ERROR", 2: "WARNING", 3: "INFO"}
    return levels.get(verbosity, "DEBUG" if verbosity > 3 else "ERROR")


class _AtDebug(logging.Filter):
    """Some loggers' info records (uvicorn's banner: "Started server process", "Waiting for
    application startup.") read as debug: shown only when the threshold is debug."""

    def __init__(self, names: tuple[str, ...], threshold: int) -> None:
        super().__init__()
        self._names = frozenset(names)
        self._threshold = threshold

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.INFO and record.name in self._names:
            if self._threshold > logging.DEBUG:
                return False
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


def _json_dumps(obj: Any, **_: Any) -> str:
    return msgspec.json.encode(obj, enc_hook=str).decode()


def _drop_color_message(_: Any, __: str, event: dict[str, Any]) -> dict[str, Any]:
    event.pop("color_message", None)  # uvicorn's ANSI-coloured duplicate of the message
    return event


def _drop_restated(_: Any, __: str, event: dict[str, Any]) -> dict[str, Any]:
    # A record may restate some fields in its message (the access line's "POST /x 200 12 ms"):
    # a terminal shows them once, JSON keeps them as fields for machines.
    for key in event.pop("restated", ()):
        event.pop(key, None)
    return event


def _forget_restated(_: Any, __: str, event: dict[str, Any]) -> dict[str, Any]:
    event.pop("restated", None)
    return event


def configure_logging(
    *, json: bool | None = None, level: str = "INFO", debug_loggers: tuple[str, ...] = ()
) -> None:
    """``debug_loggers``: loggers whose info records are logged as debug."""
    json = (not sys.stderr.isatty()) if json is None else json
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.ExtraAdder(),
        _drop_color_message,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    final: list[Any]
    if json:
        # No locals in tracebacks: they may hold API keys.
        final = [
            _forget_restated,
            structlog.processors.ExceptionRenderer(
                structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
            ),
            structlog.processors.JSONRenderer(serializer=_json_dumps),
        ]
    else:
        final = [_drop_restated, structlog.dev.ConsoleRenderer()]
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *final],
        )
    )
    handler.addFilter(_AtDebug(debug_loggers, logging.getLevelName(level)))
    logging.basicConfig(handlers=[handler], level=level, force=True)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "litestar"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").setLevel("WARNING")
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel("WARNING")
