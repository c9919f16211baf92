"""Thinking split into reasoning_content, whole and streamed, as --reasoning-format says."""

from __future__ import annotations

import pytest

from tests.support.output_splits import assert_output_parses_to
from worker.chat.formats import OutputParser, OutputStream, ThinkingTags, detect_format
from worker.chat.formats.families import HERMES

THINK = ThinkingTags()


@pytest.mark.parametrize(
    ("text", "opened", "reasoning", "content"),
    [
        ("<think>\nLet me see.\n</think>\n\nIt is sunny.", False, "Let me see.", "It is sunny."),
        ("Let me see.</think>It is sunny.", True, "Let me see.", "It is sunny."),  # R1, Qwen 3
        ("<think>Still thinking", False, "Still thinking", ""),  # cut short: all thinking
        ("No thinking at all.", False, "", "No thinking at all."),
        ("It says <think> later.", False, "", "It says <think> later."),
    ],
)
def test_thinking_is_split_whole_and_at_every_split(
    text: str, opened: bool, reasoning: str, content: str
) -> None:
    parser = OutputParser(thinking=THINK, thinking_open=opened)
    assert_output_parses_to(parser, text, reasoning=reasoning, content=content)


def test_thinking_streams_as_reasoning_before_the_answer() -> None:
    stream = OutputStream(OutputParser(thinking=THINK))
    assert stream.feed("<thi").reasoning == ""  # maybe the tag: nothing yet
    first = stream.feed("nk>Hmm, ")
    assert (first.reasoning, first.content) == ("Hmm,", "")
    assert stream.feed("rain.</th").reasoning == " rain."
    after = stream.feed("ink>Bring an umbrella.")
    assert (after.reasoning, after.content) == ("", "Bring an umbrella.")


def test_reasoning_format_none_leaves_the_tags_in_the_content() -> None:
    text = "<think>Hmm.</think>Yes."
    message = OutputParser().whole(text)
    assert (message.reasoning, message.content) == ("", text)


def test_deepseek_legacy_fills_both() -> None:
    text = "<think>Hmm.</think>Yes."
    message = OutputParser(thinking=THINK, reasoning_in_content=True).whole(text)
    assert (message.reasoning, message.content) == ("Hmm.", text)


def test_a_tool_call_after_thinking() -> None:
    text = '<think>Call it.</think>\n<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
    message = OutputParser(tools=HERMES, thinking=THINK).whole(text)
    assert message.reasoning == "Call it."
    assert [(c.name, c.arguments) for c in message.tool_calls] == [("f", '{"a": 1}')]
    assert message.content == ""


def test_a_tool_call_inside_thinking_is_not_a_call() -> None:
    text = '<think>Maybe <tool_call>{"name": "f", "arguments": {}}</tool_call>?</think>No.'
    message = OutputParser(tools=HERMES, thinking=THINK).whole(text)
    assert (message.content, message.tool_calls) == ("No.", [])


R7B = "<|START_THINKING|><|END_THINKING|><|START_ACTION|><|START_RESPONSE|>"


@pytest.mark.parametrize(
    ("text", "reasoning", "content"),
    [
        ("<|START_RESPONSE|>Hello, world!<|END_RESPONSE|>", "", "Hello, world!"),
        ("<|START_THINKING|>I'm\nthinking<|END_THINKING|><|START_RESPONSE|>Hi!<|END_RESPONSE|>",
         "I'm\nthinking", "Hi!"),
    ],
)  # fmt: skip
def test_command_r7b_response_markers_are_not_content(
    text: str, reasoning: str, content: str
) -> None:
    found = detect_format(R7B)
    parser = OutputParser(thinking=found.thinking, content_markers=found.content_markers)
    assert_output_parses_to(parser, text, reasoning=reasoning, content=content)
