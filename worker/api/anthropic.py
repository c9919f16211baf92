"""Anthropic's Messages API (``/v1/messages``, ``/v1/messages/count_tokens``) over :func:`run_chat`.

A request is translated into a :class:`~worker.protocol.ChatRequest` and answered by the one chat
pipeline; :class:`~worker.shapes_anthropic.MessagesShape` words the answer the Anthropic way.

Supported: ``system`` (string or text blocks); ``messages`` with ``text``, ``tool_use`` and
``tool_result`` blocks; ``max_tokens``, ``stop_sequences``, ``temperature``, ``top_p``,
``top_k``, ``stream``; custom ``tools`` and every ``tool_choice`` type (by Corral's constrained
JSON tool mode, :mod:`worker.tools`). llama-server's own sampling fields (``ignore_eos``,
``cache_prompt``, ``seed``, ``min_p``, …) are accepted as well, as upstream does. Not supported
(400 naming the field): image and document blocks, server tools (``web_search``, …). Thinking,
``metadata``, ``cache_control`` and ``disable_parallel_tool_use`` are ignored.

Errors keep the SPEC's error JSON (``{"error": {"code", "message", "type"}}``), the same on every
Corral route, rather than Anthropic's ``{"type": "error", "error": {…}}``; a failure after a stream
has started arrives as that JSON in an unnamed ``data:`` event, as on every Corral stream.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import msgspec
from litestar import post
from litestar.response.base import ASGIResponse

from corral.errors import ApiError, decode_body, json_response
from worker.api.generation import count_prompt_tokens, run_chat
from worker.api.state import AnyRequest
from worker.protocol import ChatMessage, ChatRequest, SamplingFields
from worker.responses import ResponseShape
from worker.shapes_anthropic import MessagesShape
from worker.tools import ToolPlan

__all__ = [
    "CountTokensRequest",
    "MessagesRequest",
    "anthropic_routes",
    "to_chat_request",
]


class TextBlock(msgspec.Struct, tag_field="type", tag="text"):
    text: str


class ToolUseBlock(msgspec.Struct, tag_field="type", tag="tool_use"):
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlock(msgspec.Struct, tag_field="type", tag="tool_result"):
    tool_use_id: str
    content: str | list[TextBlock] = ""
    is_error: bool = False


Block = TextBlock | ToolUseBlock | ToolResultBlock


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
    pass


class AnyChoice(msgspec.Struct, tag_field="type", tag="any"):
    pass


class ToolNameChoice(msgspec.Struct, tag_field="type", tag="tool"):
    name: str


class NoneChoice(msgspec.Struct, tag_field="type", tag="none"):
    pass


ToolChoice = AutoChoice | AnyChoice | ToolNameChoice | NoneChoice


class MessagesRequest(SamplingFields, kw_only=True):
    """``POST /v1/messages``; ``SamplingFields`` brings llama-server's extras, as upstream."""

    messages: Annotated[list[Message], msgspec.Meta(min_length=1)]
    max_tokens: Annotated[int, msgspec.Meta(ge=1)]
    system: str | list[TextBlock] | None = None
    stop_sequences: list[str] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None


class CountTokensRequest(MessagesRequest, kw_only=True):
    """``POST /v1/messages/count_tokens``: the same conversation, without a budget."""

    max_tokens: int = 1


def _text(blocks: str | list[TextBlock]) -> str:
    return blocks if isinstance(blocks, str) else "".join(block.text for block in blocks)


def _tool_call(block: ToolUseBlock) -> dict[str, Any]:
    function = {"name": block.name, "arguments": json.dumps(block.input)}
    return {"id": block.id, "type": "function", "function": function}


def _tool_message(block: ToolResultBlock) -> ChatMessage:
    text = _text(block.content)
    # The model only sees text: an error flag it cannot see would make a failure read as data.
    if block.is_error:
        text = f"Error: {text}"
    return ChatMessage("tool", text, tool_call_id=block.tool_use_id)


def _chat_messages(body: MessagesRequest) -> list[ChatMessage]:
    chat: list[ChatMessage] = []
    if body.system:
        chat.append(ChatMessage("system", _text(body.system)))
    for i, message in enumerate(body.messages):
        if isinstance(message.content, str):
            chat.append(ChatMessage(message.role, message.content))
            continue
        text: list[str] = []
        calls: list[dict[str, Any]] = []
        for j, block in enumerate(message.content):
            where = f"messages[{i}].content[{j}]"
            if isinstance(block, TextBlock):
                text.append(block.text)
            elif isinstance(block, ToolUseBlock):
                if message.role != "assistant":
                    raise ApiError(400, f"{where}: tool_use blocks belong in assistant messages")
                calls.append(_tool_call(block))
            else:
                if message.role != "user":
                    raise ApiError(400, f"{where}: tool_result blocks belong in user messages")
                # Text before a result stays before it: results answer the previous turn.
                if text:
                    chat.append(ChatMessage("user", "".join(text)))
                    text = []
                chat.append(_tool_message(block))
        if message.role == "assistant":
            chat.append(ChatMessage("assistant", "".join(text) or None, tool_calls=calls or None))
        elif text or not message.content:
            chat.append(ChatMessage("user", "".join(text)))
    return chat


def _tools(body: MessagesRequest) -> tuple[list[dict[str, Any]] | None, Any]:
    """Anthropic's tools and tool_choice in the OpenAI form :func:`plan_tools` reads."""
    if not body.tools:
        return None, None
    tools = [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
            },
        }
        for t in body.tools
    ]
    choice = body.tool_choice
    if choice is None or isinstance(choice, AutoChoice):
        return tools, "auto"
    if isinstance(choice, AnyChoice):
        return tools, "required"
    if isinstance(choice, NoneChoice):
        return tools, "none"
    return tools, {"type": "function", "function": {"name": choice.name}}


def to_chat_request(body: MessagesRequest) -> ChatRequest:
    """The Messages request as the chat request :func:`run_chat` answers."""
    sampling = {name: getattr(body, name) for name in SamplingFields.__struct_fields__}
    stops = [body.stop] if isinstance(body.stop, str) else list(body.stop or [])
    sampling["stop"] = [*(body.stop_sequences or []), *stops]
    tools, tool_choice = _tools(body)
    return ChatRequest(
        **sampling,
        messages=_chat_messages(body),
        tools=tools,
        tool_choice=tool_choice,
        max_tokens=body.max_tokens,
    )


def _shape(alias: str, plan: ToolPlan | None) -> ResponseShape:
    return MessagesShape(alias, plan)


@post("/v1/messages", status_code=200)
async def messages(request: AnyRequest) -> ASGIResponse:
    body = decode_body(await request.body(), MessagesRequest)
    return await run_chat(request, to_chat_request(body), _shape)


@post("/v1/messages/count_tokens", status_code=200)
async def count_tokens(request: AnyRequest) -> ASGIResponse:
    body = decode_body(await request.body(), CountTokensRequest)
    return json_response(
        {"input_tokens": await count_prompt_tokens(request, to_chat_request(body))}
    )


anthropic_routes = [messages, count_tokens]
