"""OpenAI's Responses request body (``POST /v1/responses``) and its input items."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from worker.answer.sampling_fields import SamplingFields

__all__ = [
    "FunctionCallItem",
    "FunctionCallOutputItem",
    "FunctionChoice",
    "FunctionTool",
    "InputImage",
    "InputText",
    "Item",
    "MessageItem",
    "OutputText",
    "ResponsesRequest",
    "TextConfig",
    "TextFormat",
]


class InputText(msgspec.Struct, tag_field="type", tag="input_text"):
    text: str


class OutputText(msgspec.Struct, tag_field="type", tag="output_text"):
    text: str


class InputImage(msgspec.Struct, tag_field="type", tag="input_image"):
    image_url: str  # a data: URI or an http(s) URL (uploaded file ids are not supported)
    detail: str = "auto"


class MessageItem(msgspec.Struct):
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[InputText | OutputText | InputImage]


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
