"""What every child (worker or download) gets from the router, and what it says back.

Children start from the router's environment without its secrets (SPEC §8), and their log
lines are re-emitted in the router's log, tagged with the model they belong to.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from typing import Any

import msgspec
import structlog

from worker.lifeline import ROUTER_PID_ENV

__all__ = ["SECRET_ENV", "child_environment", "relay_log_line"]

# Never handed to a child: workers serve loopback only, with no key. The hub token is for
# download children only, which get it back explicitly.
SECRET_ENV = frozenset({
    "LLAMA_API_KEY", "LLAMA_ARG_API_KEY_FILE", "LLAMA_ARG_SSL_KEY_FILE",
    "LLAMA_ARG_SSL_CERT_FILE", "CORRAL_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
})  # fmt: skip

_log = structlog.get_logger("corral.children")
_LEVELS = logging.getLevelNamesMapping() | {
    name.lower(): value for name, value in logging.getLevelNamesMapping().items()
}


def child_environment() -> dict[str, str]:
    """The router's environment minus its secrets, plus its pid for the child's lifeline."""
    env = {key: value for key, value in os.environ.items() if key not in SECRET_ENV}
    env[ROUTER_PID_ENV] = str(os.getpid())
    return env


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
