"""Synthetic generation results and SSE parsing for the response-shape tests."""

from __future__ import annotations

import json
from typing import Any

from worker.batching import Finished
from worker.tools import ToolPlan, plan_tools

__all__ = ["WEATHER_PLAN", "finished", "sse_events"]

_TOOL = {"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}
WEATHER_PLAN: ToolPlan | None = plan_tools([_TOOL], "auto")
TIMINGS = {"prompt_n": 5.0, "predicted_n": 3.0}


def finished(reason: str = "stop", stop_word: str | None = None) -> Finished:
    """7 prompt tokens (2 of them cached), 3 predicted."""
    return Finished(reason, stop_word, 7, 2, 3, dict(TIMINGS))


def sse_events(stream: bytes) -> list[tuple[str | None, Any]]:
    """``(event name, data)`` per server-sent event; ``[DONE]`` stays a string."""
    events: list[tuple[str | None, Any]] = []
    for block in stream.decode().split("\n\n"):
        if not block:
            continue
        name, data = None, None
        for line in block.split("\n"):
            field, _, value = line.partition(": ")
            if field == "event":
                name = value
            elif field == "data":
                data = value if value == "[DONE]" else json.loads(value)
        events.append((name, data))
    return events
