"""The tool the chat tests on a real worker offer the model, and the question they ask it."""

from __future__ import annotations

__all__ = ["ASK", "PARAMETERS", "WEATHER"]

PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string", "enum": ["Oslo", "Lima"]}},
    "required": ["city"],
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": PARAMETERS,
    },
}
ASK = [{"role": "user", "content": "What is the weather in Oslo?"}]
