"""Synthetic generation results, output readers and SSE parsing for the response-shape tests."""

from __future__ import annotations

import json
from typing import Any

from tests.support.files.tiny_gguf import CHATML_TEMPLATE
from worker.chat.formats import OutputParser, ThinkingTags
from worker.chat.formats.families import HERMES
from worker.chat.output import plan_output
from worker.engine.generation import Finished

__all__ = ["GENERIC_TOOLS", "HERMES_THINKING", "NATIVE", "PLAIN", "finished", "sse_events"]

_TOOL = {"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}
PLAIN = OutputParser()
# A template without a tool syntax of its own: Corral's generic JSON tool mode.
GENERIC_TOOLS = plan_output(CHATML_TEMPLATE, [], [_TOOL], "auto", True, "auto").whole
# Qwen 3's way: <think>…</think> and Hermes <tool_call> JSON.
HERMES_THINKING = OutputParser(tools=HERMES, thinking=ThinkingTags())
# What such a model writes: thinking, some text, then a call.
NATIVE = (
    '<think>Hmm.</think>Let me check.<tool_call>{"name": "weather", "arguments": '
    '{"city": "Oslo"}}</tool_call>'
)
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
