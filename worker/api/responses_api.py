"""OpenAI's Responses API (``POST /v1/responses``) over :func:`run_chat`.

A request is translated into a :class:`~worker.protocol.ChatRequest` and answered by the one chat
pipeline; :class:`~worker.shapes_responses.ResponsesShape` words the answer.

Supported: ``input`` as a string or a list of message items (roles user, assistant, system,
developer; content a string or ``input_text``/``output_text`` parts), ``function_call`` and
``function_call_output`` items; ``instructions``, ``max_output_tokens``, ``temperature``,
``top_p``, ``stream``, function ``tools``, ``tool_choice`` (none, auto, required, or a function),
and ``text.format`` (text, json_object, json_schema, through the same grammars as
``response_format``). llama-server's own sampling fields are accepted too. Not supported (400
naming the field): ``previous_response_id`` (nothing is stored: send the whole conversation),
images, files, built-in tools (web search, file search, …) and other item types such as
``reasoning``. ``store``, ``metadata``, ``reasoning``, ``truncation`` and ``user`` are ignored.

Errors keep the SPEC's error JSON (``{"error": {"code", "message", "type"}}``), the same on every
Corral route, rather than Responses' ``error`` event; the OpenAI client raises an ``APIError`` with
that message, before a stream and within one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import msgspec
from litestar import post
from litestar.response.base import ASGIResponse

from corral.errors import ApiError, decode_body
from worker.api.generation import run_chat
from worker.api.state import AnyRequest
from worker.protocol import ChatMessage, ChatRequest, SamplingFields
from worker.responses import ResponseShape
from worker.shapes_responses import ResponsesShape
from worker.tools import ToolPlan

__all__ = ["ResponsesRequest", "responses_routes", "to_chat_request"]


class InputText(msgspec.Struct, tag_field="type", tag="input_text"):
    text: str


class OutputText(msgspec.Struct, tag_field="type", tag="output_text"):
    text: str


class MessageItem(msgspec.Struct):
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[InputText | OutputText]


class FunctionCallItem(msgspec.Struct):
    call_id: str
    name: str
    arguments: str


class FunctionCallOutputItem(msgspec.Struct):
    call_id: str
    output: str | list[InputText]


class FunctionTool(msgspec.Struct, tag_field="type", tag="function", kw_only=True):
    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class FunctionChoice(msgspec.Struct, tag_field="type", tag="function"):
    name: str


class TextFormat(msgspec.Struct, kw_only=True):
    type: Literal["text", "json_object", "json_schema"]
    schema: dict[str, Any] | None = None


class TextConfig(msgspec.Struct, kw_only=True):
    format: TextFormat | None = None


class ResponsesRequest(SamplingFields, kw_only=True):
    """``POST /v1/responses``; ``SamplingFields`` brings llama-server's extras, as upstream."""

    # Items stay plain here: message items may omit "type", so they cannot be a tagged union.
    input: str | list[dict[str, Any]]
    instructions: str | None = None
    max_output_tokens: Annotated[int, msgspec.Meta(ge=1)] | None = None
    tools: list[FunctionTool] | None = None
    tool_choice: Literal["none", "auto", "required"] | FunctionChoice | None = None
    parallel_tool_calls: bool = True
    text: TextConfig | None = None
    previous_response_id: str | None = None


Item = MessageItem | FunctionCallItem | FunctionCallOutputItem

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


def _text(content: str | Sequence[InputText | OutputText]) -> str:
    return content if isinstance(content, str) else "".join(part.text for part in content)


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
            chat.append(ChatMessage(role, _text(item.content)))
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
    """The Responses request as the chat request :func:`run_chat` answers."""
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
        max_tokens=body.max_output_tokens,
    )


def _echo(body: ResponsesRequest) -> dict[str, Any]:
    """The request fields a response object repeats back."""
    return {
        "instructions": body.instructions,
        "max_output_tokens": body.max_output_tokens,
        "parallel_tool_calls": body.parallel_tool_calls,
        "temperature": body.temperature,
        "top_p": body.top_p,
        "tool_choice": msgspec.to_builtins(body.tool_choice) if body.tool_choice else "auto",
        "tools": msgspec.to_builtins(body.tools or []),
    }


@post("/v1/responses", status_code=200)
async def responses(request: AnyRequest) -> ASGIResponse:
    body = decode_body(await request.body(), ResponsesRequest)
    echo = _echo(body)

    def shape(alias: str, plan: ToolPlan | None) -> ResponseShape:
        return ResponsesShape(alias, plan, echo)

    return await run_chat(request, to_chat_request(body), shape)


responses_routes = [responses]
