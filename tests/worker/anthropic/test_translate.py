"""Anthropic requests as the chat pipeline's ChatRequest (worker.anthropic.translate)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from corral.errors import ApiError
from worker.anthropic.protocol import MessagesRequest
from worker.anthropic.translate import to_chat_request
from worker.chat_request import ChatMessage

TOOL = {"name": "weather", "description": "Weather", "input_schema": {"type": "object"}}


def _request(**fields: Any) -> MessagesRequest:
    return msgspec.convert({"max_tokens": 8, **fields}, MessagesRequest)


def test_system_text_blocks_and_stops() -> None:
    chat = to_chat_request(
        _request(
            system=[{"type": "text", "text": "Be "}, {"type": "text", "text": "brief."}],
            messages=[{"role": "user", "content": "hi"}],
            stop_sequences=["###"],
            stop="END",
            temperature=0.3,
        )
    )
    assert chat.messages == [ChatMessage("system", "Be brief."), ChatMessage("user", "hi")]
    assert chat.stop == ["###", "END"]
    assert (chat.max_tokens, chat.temperature, chat.tools) == (8, 0.3, None)


def test_tool_use_and_results_become_openai_tool_traffic() -> None:
    chat = to_chat_request(
        _request(
            messages=[
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "t1", "name": "weather", "input": {"c": "Oslo"}},
                ]},
                {"role": "user", "content": [
                    {"type": "text", "text": "Here:"},
                    {"type": "tool_result", "tool_use_id": "t1", "content": "down",
                     "is_error": True},
                ]},
            ]
        )
    )  # fmt: skip
    assert [m.role for m in chat.messages] == ["user", "assistant", "user", "tool"]
    assistant = chat.messages[1]
    assert assistant.content == "Checking."
    assert assistant.tool_calls == [
        {"id": "t1", "type": "function",
         "function": {"name": "weather", "arguments": '{"c": "Oslo"}'}}
    ]  # fmt: skip
    assert chat.messages[2] == ChatMessage("user", "Here:")
    assert chat.messages[3] == ChatMessage("tool", "Error: down", tool_call_id="t1")


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        (None, "auto"),
        ({"type": "auto"}, "auto"),
        ({"type": "any"}, "required"),
        ({"type": "none"}, "none"),
        ({"type": "tool", "name": "weather"},
         {"type": "function", "function": {"name": "weather"}}),
    ],
)  # fmt: skip
def test_tool_choice_in_openai_terms(choice: dict[str, str] | None, expected: Any) -> None:
    fields: dict[str, Any] = {"messages": [{"role": "user", "content": "x"}], "tools": [TOOL]}
    if choice is not None:
        fields["tool_choice"] = choice
    chat = to_chat_request(_request(**fields))
    assert chat.tool_choice == expected
    assert chat.tools is not None
    assert chat.tools[0]["function"]["parameters"] == {"type": "object"}


@pytest.mark.parametrize(
    ("role", "block", "message"),
    [
        ("user", {"type": "tool_use", "id": "t", "name": "n", "input": {}}, "assistant messages"),
        ("assistant", {"type": "tool_result", "tool_use_id": "t"}, "user messages"),
    ],
)
def test_blocks_in_the_wrong_turn_are_400_with_their_path(
    role: str, block: dict[str, Any], message: str
) -> None:
    body = _request(messages=[{"role": role, "content": [block]}])
    with pytest.raises(ApiError, match=rf"messages\[0\]\.content\[0\].*{message}"):
        to_chat_request(body)
