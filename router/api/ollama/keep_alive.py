"""Ollama's ``keep_alive``: seconds as a number, or a Go duration ("5m", "1h30m", "-1s").

0 unloads the model once the request is answered; a negative value keeps it loaded for ever
(``inf``); anything else is how long it stays loaded once idle (the model's ttl until its
worker exits, router/scheduling/scheduler.py).
"""

from __future__ import annotations

import math
import re

from corral.http.errors import ApiError

__all__ = ["keep_alive_seconds"]

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION = re.compile(r"(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+")


def keep_alive_seconds(value: float | str) -> float:
    if isinstance(value, str):
        text = value.strip()
        try:
            seconds = float(text)  # a number in a string: seconds, as Ollama reads it
        except ValueError:
            sign = -1.0 if text.startswith("-") else 1.0
            body = text.lstrip("+-")
            if not _DURATION.fullmatch(body):
                raise ApiError(400, f'time: invalid duration "{value}"') from None
            seconds = sign * sum(float(n) * _UNITS[unit] for n, unit in _PART.findall(body))
    else:
        seconds = float(value)
    if math.isnan(seconds):
        raise ApiError(400, f'time: invalid duration "{value}"')
    return math.inf if seconds < 0 else seconds
