"""Anthropic requests as the chat pipeline's ChatRequest (worker.api.anthropic.translate)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from corral.http.errors import ApiError
from worker.api.anthropic.protocol import MessagesRequest
from worker.api.anthropic.translate import to_chat_request
from worker.chat.request import ChatMessage

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


def test_thinking_blocks_are_the_turns_reasoning_content() -> None:
    # As llama-server's conversion: a template that shows past thinking then renders it.
    chat = to_chat_request(
        _request(
            messages=[
                {"role": "user", "content": "Fix it"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Look first. ", "signature": "abc"},
                    {"type": "redacted_thinking", "data": "opaque"},
                    {"type": "thinking", "thinking": "Then act."},
                    {"type": "tool_use", "id": "t1", "name": "weather", "input": {}},
                ]},
            ]
        )
    )  # fmt: skip
    assistant = chat.messages[1]
    assert assistant.reasoning_content == "Look first. Then act."
    assert (assistant.content, assistant.tool_calls is not None) == (None, True)


def test_thinking_blocks_in_a_user_turn_are_refused() -> None:
    with pytest.raises(ApiError, match=r"messages\[0\]\.content\[0\]: thinking blocks"):
        to_chat_request(
            _request(
                messages=[{"role": "user", "content": [{"type": "thinking", "thinking": "x"}]}]
            )
        )


@pytest.mark.parametrize(
    ("thinking", "budget"),
    [
        (None, -1),
        ({"type": "enabled", "budget_tokens": 50}, 50),
        ({"type": "enabled"}, 10000),  # llama-server's default budget
        ({"type": "disabled"}, -1),
    ],
)
def test_extended_thinking_sets_the_thinking_budget(
    thinking: dict[str, Any] | None, budget: int
) -> None:
    fields: dict[str, Any] = {"messages": [{"role": "user", "content": "x"}]}
    if thinking is not None:
        fields["thinking"] = thinking
    assert to_chat_request(_request(**fields)).thinking_budget_tokens == budget


def test_a_tool_result_with_an_image_keeps_openai_parts_in_order() -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "QQ=="},
    }
    result = {"type": "tool_result", "tool_use_id": "t1", "is_error": True,
              "content": [{"type": "text", "text": "File:"}, image]}  # fmt: skip
    chat = to_chat_request(_request(messages=[{"role": "user", "content": [result]}]))
    assert chat.messages == [
        ChatMessage(
            "tool",
            [
                {"type": "text", "text": "Error: "},
                {"type": "text", "text": "File:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QQ=="}},
            ],
            tool_call_id="t1",
        )
    ]


def test_no_messages_and_no_max_tokens_are_accepted_as_llama_server() -> None:
    chat = to_chat_request(msgspec.convert({"messages": []}, MessagesRequest))
    assert (chat.messages, chat.max_tokens) == ([], 4096)
