"""gpt-oss's Harmony channels, on the outputs llama.cpp's test-chat uses, whole and streamed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.output_splits import assert_output_parses_to
from worker.chat.formats import OutputParser, detect_format
from worker.chat.formats.own_shape.harmony import GPT_OSS, HarmonySyntax

THOUGHTS = "<|channel|>analysis<|message|>I'm\nthinking<|end|>"
CASES: list[tuple[str, str, str, list[tuple[str, Any]]]] = [
    ("<|channel|>final<|message|>Hello, world!\nWhat's up?", "", "Hello, world!\nWhat's up?", []),
    ("<|channel|>commentary<|message|>Hello, world!", "", "Hello, world!", []),
    (f"{THOUGHTS}<|start|>assistant<|channel|>final<|message|>Hi!", "I'm\nthinking", "Hi!", []),
    (' to=functions.special_function<|channel|>analysis<|message|>{"arg1": 1}',
     "", "", [("special_function", {"arg1": 1})]),
    ('<|channel|>commentary to=functions.special_function <|constrain|>json<|message|>{"arg1": 1}'
     "<|call|>", "", "", [("special_function", {"arg1": 1})]),
    (f'{THOUGHTS}<|start|>assistant to=functions.f<|channel|>commentary<|message|>{{"a": "b"}}',
     "I'm\nthinking", "", [("f", {"a": "b"})]),
]  # fmt: skip


@pytest.mark.parametrize(("text", "reasoning", "content", "calls"), CASES)
def test_channels_whole_and_split_at_every_position(
    text: str, reasoning: str, content: str, calls: list[tuple[str, Any]]
) -> None:
    parser = OutputParser(tools=GPT_OSS)
    assert_output_parses_to(parser, text, reasoning=reasoning, content=content, calls=calls)


def test_reasoning_format_none_keeps_the_analysis_in_the_content() -> None:
    text = f"{THOUGHTS}<|start|>assistant<|channel|>final<|message|>Hi!"
    message = OutputParser(tools=HarmonySyntax(split_reasoning=False)).whole(text)
    assert (message.reasoning, message.content) == ("", f"{THOUGHTS}Hi!")


def test_a_call_with_bad_arguments_is_text() -> None:
    text = "<|channel|>commentary to=functions.f<|message|>{nope<|call|>"
    message = OutputParser(tools=GPT_OSS).whole(text)
    assert (message.content, message.tool_calls) == (text, [])


def test_the_template_marker() -> None:
    assert detect_format("<|start|>assistant<|channel|>final<|message|>").name == "gpt-oss"
