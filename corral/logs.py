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

__all__ = ["configure_logging"]


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


def configure_logging(*, json: bool | None = None, level: str = "INFO") -> None:
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
    logging.basicConfig(handlers=[handler], level=level, force=True)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "litestar"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").setLevel("WARNING")
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel("WARNING")
