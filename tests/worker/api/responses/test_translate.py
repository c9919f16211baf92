"""Responses requests as the chat pipeline's ChatRequest (worker.api.responses.translate)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from corral.http.errors import ApiError
from worker.api.responses.protocol import ResponsesRequest
from worker.api.responses.translate import echoed_fields, to_chat_request
from worker.chat.request import ChatMessage


def _request(**fields: Any) -> ResponsesRequest:
    return msgspec.convert(fields, ResponsesRequest)


def test_a_string_input_after_the_instructions() -> None:
    chat = to_chat_request(_request(input="hi", instructions="Be brief.", max_output_tokens=9))
    assert chat.messages == [ChatMessage("system", "Be brief."), ChatMessage("user", "hi")]
    assert chat.max_tokens == 9


def test_items_become_chat_turns_with_parallel_calls_in_one_turn() -> None:
    chat = to_chat_request(
        _request(
            input=[
                {"role": "developer", "content": "Rules."},
                {"role": "user", "content": [{"type": "input_text", "text": "Both?"}]},
                {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
                {"type": "function_call", "call_id": "b", "name": "g", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "a", "output": "1"},
            ]
        )
    )
    assert [m.role for m in chat.messages] == ["system", "user", "assistant", "tool"]
    assert chat.messages[1].content == "Both?"
    calls = chat.messages[2].tool_calls
    assert calls is not None
    assert [call["id"] for call in calls] == ["a", "b"]
    assert chat.messages[3] == ChatMessage("tool", "1", tool_call_id="a")


def test_text_format_becomes_response_format() -> None:
    schema = {"type": "object"}
    chat = to_chat_request(
        _request(input="x", text={"format": {"type": "json_schema", "schema": schema}})
    )
    assert chat.response_format == {"type": "json_schema", "json_schema": {"schema": schema}}
    chat = to_chat_request(_request(input="x", text={"format": {"type": "json_object"}}))
    assert chat.response_format == {"type": "json_object"}


def test_function_tools_and_choice_in_openai_terms() -> None:
    chat = to_chat_request(
        _request(
            input="x",
            tools=[{"type": "function", "name": "f", "parameters": {"type": "object"}}],
            tool_choice={"type": "function", "name": "f"},
        )
    )
    assert chat.tools == [{"type": "function", "function": {
        "name": "f", "description": "", "parameters": {"type": "object"}}}]  # fmt: skip
    assert chat.tool_choice == {"type": "function", "function": {"name": "f"}}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"previous_response_id": "resp_1"}, "previous_response_id is not supported"),
        ({"text": {"format": {"type": "json_schema"}}}, "text.format.schema is required"),
        ({"input": [{"type": "reasoning"}]}, r"input\[0\]\.type 'reasoning'"),
        (
            {"input": [{"type": "function_call", "call_id": 1, "name": "f", "arguments": ""}]},
            r"\$\.input\[0\]\.call_id",
        ),
    ],
)
def test_unsupported_requests_are_400_naming_the_field(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(ApiError, match=message):
        to_chat_request(_request(**{"input": "x", **fields}))


def test_the_echoed_fields_default_tool_choice_to_auto() -> None:
    echo = echoed_fields(_request(input="x", temperature=0.2))
    assert (echo["tool_choice"], echo["tools"], echo["temperature"]) == ("auto", [], 0.2)
