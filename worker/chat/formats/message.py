"""What a chat format parses a model's output into, and the stream deltas between two parses.

Streams are parsed as llama.cpp does (``common_chat_msg_diff::compute_diffs``): the whole text
so far is parsed again after every piece, in partial mode, and the client gets the difference
from the previous parse. Partial parses only ever grow, so the differences are appends.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MessageDelta", "ParsedMessage", "ToolCall", "message_delta", "new_call_id"]


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass(slots=True)
class ToolCall:
    name: str
    arguments: str  # JSON text; while streaming, a prefix of the final text
    id: str = ""  # the model's own id when its format has one, else given at the pipeline

    def openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(slots=True)
class ParsedMessage:
    content: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)


@dataclass(slots=True)
class MessageDelta:
    content: str = ""
    reasoning: str = ""
    # (index, call): a new call carries its name and id, a continued one only argument text.
    tool_calls: list[tuple[int, ToolCall]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.content or self.reasoning or self.tool_calls)


def _grown(before: str, after: str) -> str:
    """The text ``after`` adds to ``before``; nothing when a parse rewrote what was sent."""
    return after[len(before) :] if after.startswith(before) else ""


def message_delta(before: ParsedMessage, after: ParsedMessage) -> MessageDelta:
    """What a client still needs to go from ``before`` to ``after``.

    ``after`` has its calls' ids already given for the calls ``before`` had.
    """
    delta = MessageDelta(_grown(before.content, after.content),
                         _grown(before.reasoning, after.reasoning))  # fmt: skip
    for index, call in enumerate(after.tool_calls):
        if index < len(before.tool_calls):
            pieces = _grown(before.tool_calls[index].arguments, call.arguments)
            if pieces:
                delta.tool_calls.append((index, ToolCall("", pieces)))
        else:
            delta.tool_calls.append((index, call))
    return delta
