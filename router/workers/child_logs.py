"""A child's log lines, re-emitted in the router's log and tagged with the model they belong to.

At info the console says each model's lifecycle once, in the router's words (``starting
worker``, ``model loaded``), and one line per request (issue 54). So a child's lines that repeat
or explain it in llama.cpp's terms go to debug (``-lv 4``, ``--verbose``): its plain text
(llama.cpp's own output: buffer sizes, ``state_read_meta``), its server's banner, and its own
``model loaded``. They still explain a failure: a child that dies is quoted by ``worker
exited``, from ``last_error``.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any

import msgspec
import structlog

__all__ = ["relay_log_line"]

_log = structlog.get_logger("corral.children")
# A worker's records that the router's own lines say already.
_SAID_BY_THE_ROUTER = frozenset({"model loaded"})
_LEVELS = logging.getLevelNamesMapping() | {
    name.lower(): value for name, value in logging.getLevelNamesMapping().items()
}


def _parse(text: str) -> tuple[str, dict[str, Any], str | None, str]:
    """A child's log line as (message, fields, level, logger); plain text has neither."""
    if text.startswith("{"):
        try:
            record = msgspec.json.decode(text)
        except msgspec.DecodeError:
            return text, {}, None, ""
        if isinstance(record, dict):
            event = str(record.pop("event", ""))
            level = str(record.pop("level", "info"))
            record.pop("timestamp", None)
            return event, record, level, str(record.pop("logger", ""))
    return text, {}, None, ""


def _level(message: str, level: str | None, logger: str) -> int:
    if level is None:  # plain text: llama.cpp's own lines, or a dying child's traceback
        return logging.DEBUG
    shown = _LEVELS.get(level, logging.INFO)
    if shown == logging.INFO and (logger.startswith("uvicorn") or message in _SAID_BY_THE_ROUTER):
        return logging.DEBUG
    return shown


def relay_log_line(text: str, *, model: str, source: str, last_error: deque[str]) -> None:
    """Re-emit one child log line; remember it in ``last_error`` if it explains a failure.

    Worth quoting when a child dies: its error records, and raw text such as the last line of
    a Python traceback or a llama.cpp abort message.
    """
    if not text.strip():
        return
    message, fields, level, logger = _parse(text)
    if level in (None, "error", "critical"):
        error = fields.get("error")
        last_error.append(f"{message}: {error}" if error else message)
    _log.log(
        _level(message, level, logger),
        message,
        **{**fields, "model": model, "source": source},
    )
