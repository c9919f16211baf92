"""A child's log lines, re-emitted in the router's log and tagged with the model they belong to."""

from __future__ import annotations

import logging
from collections import deque
from typing import Any

import msgspec
import structlog

__all__ = ["relay_log_line"]

_log = structlog.get_logger("corral.children")
_LEVELS = logging.getLevelNamesMapping() | {
    name.lower(): value for name, value in logging.getLevelNamesMapping().items()
}


def _parse(text: str) -> tuple[str, dict[str, Any], str | None]:
    """A child's log line as (message, fields, level); plain text has no level."""
    if text.startswith("{"):
        try:
            record = msgspec.json.decode(text)
        except msgspec.DecodeError:
            return text, {}, None
        if isinstance(record, dict):
            event = str(record.pop("event", ""))
            level = str(record.pop("level", "info"))
            for key in ("timestamp", "logger"):
                record.pop(key, None)
            return event, record, level
    return text, {}, None


def relay_log_line(text: str, *, model: str, source: str, last_error: deque[str]) -> None:
    """Re-emit one child log line; remember it in ``last_error`` if it explains a failure.

    Worth quoting when a child dies: its error records, and raw text such as the last line of
    a Python traceback or a llama.cpp abort message.
    """
    if not text.strip():
        return
    message, fields, level = _parse(text)
    if level in (None, "error", "critical"):
        error = fields.get("error")
        last_error.append(f"{message}: {error}" if error else message)
    _log.log(
        _LEVELS.get(level or "info", logging.INFO),
        message,
        **{**fields, "model": model, "source": source},
    )
