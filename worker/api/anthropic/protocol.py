"""Anthropic's Messages request bodies (``/v1/messages``, ``/v1/messages/count_tokens``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from worker.answer.sampling_fields import SamplingFields

__all__ = [
    "AnyChoice",
    "AutoChoice",
    "Block",
    "CountTokensRequest",
    "ImageBlock",
    "ImageSource",
    "Message",
    "MessagesRequest",
    "NoneChoice",
    "RedactedThinkingBlock",
    "TextBlock",
    "Thinking",
    "ThinkingBlock",
    "Tool",
    "ToolChoice",
    "ToolNameChoice",
    "ToolResultBlock",
    "ToolUseBlock",
]


class TextBlock(msgspec.Struct, tag_field="type", tag="text"):
    text: str


class ToolUseBlock(msgspec.Struct, tag_field="type", tag="tool_use"):
    id: str
    name: str
    input: dict[str, Any]


class ImageSource(msgspec.Struct, kw_only=True):
    type: Literal["base64", "url"]
    media_type: str = "image/jpeg"  # llama-server's default when a base64 source names none
    data: str = ""
    url: str = ""


class ImageBlock(msgspec.Struct, tag_field="type", tag="image"):
    source: ImageSource


class ToolResultBlock(msgspec.Struct, tag_field="type", tag="tool_result"):
    tool_use_id: str
    content: str | list[TextBlock | ImageBlock] = ""
    is_error: bool = False


class ThinkingBlock(msgspec.Struct, tag_field="type", tag="thinking"):
    """An earlier answer's thinking, sent back in the history (extended thinking)."""

    thinking: str
    signature: str = ""


class RedactedThinkingBlock(msgspec.Struct, tag_field="type", tag="redacted_thinking"):
    """Thinking Anthropic's API encrypted: accepted in the history, unreadable to any model."""

    data: str = ""


Block = (
    TextBlock | ImageBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | RedactedThinkingBlock
)


class Message(msgspec.Struct):
    role: Literal["user", "assistant"]
    content: str | list[Block]


class Tool(msgspec.Struct, kw_only=True):
    name: str
    input_schema: dict[str, Any]
    description: str = ""
    # Server tools (web_search, bash, …) carry a versioned type; only custom tools can be run here.
    type: Literal["custom"] | None = None


class AutoChoice(msgspec.Struct, tag_field="type", tag="auto"):
    disable_parallel_tool_use: bool = False


class AnyChoice(msgspec.Struct, tag_field="type", tag="any"):
    disable_parallel_tool_use: bool = False


class ToolNameChoice(msgspec.Struct, tag_field="type", tag="tool"):
    name: str
    disable_parallel_tool_use: bool = False


class NoneChoice(msgspec.Struct, tag_field="type", tag="none"):
    pass


ToolChoice = AutoChoice | AnyChoice | ToolNameChoice | NoneChoice


class Thinking(msgspec.Struct, kw_only=True):
    """The request's ``thinking``: ``enabled`` with a token budget, or ``disabled``."""

    type: str
    budget_tokens: Annotated[int, msgspec.Meta(ge=0)] = 10000  # llama-server's default


class MessagesRequest(SamplingFields, kw_only=True):
    """``POST /v1/messages``; ``SamplingFields`` brings llama-server's extras, as upstream."""

    # Required but permissive, as llama-server: no messages renders the template's empty
    # conversation, no max_tokens is 4096.
    messages: list[Message]
    max_tokens: Annotated[int, msgspec.Meta(ge=1)] = 4096
    system: str | list[TextBlock] | None = None
    stop_sequences: list[str] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    thinking: Thinking | None = None


class CountTokensRequest(MessagesRequest, kw_only=True):
    """``POST /v1/messages/count_tokens``: the same conversation, without a budget."""

    max_tokens: int = 1
