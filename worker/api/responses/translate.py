"""A Responses request, translated into the chat pipeline's :class:`ChatRequest`.

Input items become chat messages (function calls as ``tool_calls``, their outputs as ``tool``
messages) and ``text.format`` becomes ``response_format``, so the same grammars apply.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from corral.http.errors import ApiError
from corral.options.sampling_fields import TEMPERATURE, TOP_P
from worker.answer.sampling_fields import SamplingFields
from worker.api.responses.protocol import (
    FunctionCallItem,
    FunctionCallOutputItem,
    FunctionChoice,
    InputImage,
    InputText,
    Item,
    MessageItem,
    OutputText,
    ResponsesRequest,
)
from worker.chat.request import ChatMessage, ChatRequest

__all__ = ["echoed_fields", "to_chat_request"]

_ITEM_TYPES: dict[str, type[Item]] = {
    "message": MessageItem,
    "function_call": FunctionCallItem,
    "function_call_output": FunctionCallOutputItem,
}


def _item(index: int, raw: dict[str, Any]) -> Item:
    kind = raw.get("type", "message")
    item_type = _ITEM_TYPES.get(kind) if isinstance(kind, str) else None
    if item_type is None:
        raise ApiError(400, f"invalid request: input[{index}].type {kind!r} is not supported")
    try:
        item: Item = msgspec.convert(raw, item_type)
    except msgspec.ValidationError as exc:
        # msgspec names the path from the item; the client needs it from the request.
        raise ApiError(
            400, f"invalid request: {str(exc).replace('`$', f'`$.input[{index}]')}"
        ) from None
    return item


def _text(content: str | Sequence[InputText | OutputText | InputImage]) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.text for part in content if not isinstance(part, InputImage))


def _content(content: str | list[InputText | OutputText | InputImage]) -> Any:
    """Text, or OpenAI chat parts when there are images (docs/api.md, "Images and audio")."""
    if isinstance(content, str) or not any(isinstance(p, InputImage) for p in content):
        return _text(content)
    return [
        {"type": "image_url", "image_url": {"url": part.image_url}}
        if isinstance(part, InputImage)
        else {"type": "text", "text": part.text}
        for part in content
    ]


def _chat_messages(body: ResponsesRequest) -> list[ChatMessage]:
    chat: list[ChatMessage] = []
    if body.instructions:
        chat.append(ChatMessage("system", body.instructions))
    if isinstance(body.input, str):
        return [*chat, ChatMessage("user", body.input)]
    for index, raw in enumerate(body.input):
        item = _item(index, raw)
        if isinstance(item, MessageItem):
            role = "system" if item.role == "developer" else item.role
            chat.append(ChatMessage(role, _content(item.content)))
        elif isinstance(item, FunctionCallItem):
            call = {"id": item.call_id, "type": "function",
                    "function": {"name": item.name, "arguments": item.arguments}}  # fmt: skip
            last = chat[-1] if chat else None
            # Parallel calls (and a call right after the assistant's words) are one turn.
            if last is not None and last.role == "assistant":
                last.tool_calls = [*(last.tool_calls or []), call]
            else:
                chat.append(ChatMessage("assistant", None, tool_calls=[call]))
        else:
            chat.append(ChatMessage("tool", _text(item.output), tool_call_id=item.call_id))
    return chat


def _tool_choice(choice: str | FunctionChoice | None) -> Any:
    if isinstance(choice, FunctionChoice):
        return {"type": "function", "function": {"name": choice.name}}
    return choice


def _response_format(body: ResponsesRequest) -> dict[str, Any] | None:
    form = body.text.format if body.text is not None else None
    if form is None or form.type == "text":
        return body.response_format
    if form.type == "json_object":
        return {"type": "json_object"}
    if form.schema is None:
        raise ApiError(400, "invalid request: text.format.schema is required for json_schema")
    return {"type": "json_schema", "json_schema": {"schema": form.schema}}


def to_chat_request(body: ResponsesRequest) -> ChatRequest:
    """The Responses request as the chat request the chat pipeline answers."""
    if body.previous_response_id is not None:
        raise ApiError(
            400,
            "previous_response_id is not supported: responses are not stored, "
            "send the whole conversation in input",
        )
    sampling = {name: getattr(body, name) for name in SamplingFields.__struct_fields__}
    sampling["response_format"] = _response_format(body)
    tools = [
        {"type": "function",
         "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in body.tools or []
    ]  # fmt: skip
    return ChatRequest(
        **sampling,
        messages=_chat_messages(body),
        tools=tools or None,
        tool_choice=_tool_choice(body.tool_choice),
        parallel_tool_calls=body.parallel_tool_calls,
        max_tokens=body.max_output_tokens,
    )


def echoed_fields(body: ResponsesRequest) -> dict[str, Any]:
    """The request fields a response object repeats back."""
    return {
        "instructions": body.instructions,
        "max_output_tokens": body.max_output_tokens,
        "parallel_tool_calls": body.parallel_tool_calls,
        TEMPERATURE.request: body.temperature,
        TOP_P.request: body.top_p,
        "tool_choice": msgspec.to_builtins(body.tool_choice) if body.tool_choice else "auto",
        "tools": msgspec.to_builtins(body.tools or []),
    }
