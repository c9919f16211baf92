"""Gemma 4's tool-call notation and thinking channel, on the outputs llama.cpp's test-chat uses."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.output_splits import assert_output_parses_to
from worker.chat.formats import OutputParser, ThinkingTags
from worker.chat.formats.own_shape.gemma4 import GEMMA4

PARSER = OutputParser(tools=GEMMA4, thinking=ThinkingTags("<|channel>thought", "<channel|>"))
Q = '<|"|>'
CASES: list[tuple[str, str, str, list[tuple[str, Any]]]] = [
    ("Hello, world!", "", "Hello, world!", []),
    ("<|channel>thought\nI'm\nthinking<channel|>Hi!", "I'm\nthinking", "Hi!", []),
    (f"<|tool_call>call:get_time{{city:{Q}San Francisco{Q}}}<tool_call|>",
     "", "", [("get_time", {"city": "San Francisco"})]),
    ("<|tool_call>call:empty_args{}<tool_call|>", "", "", [("empty_args", {})]),
    (f"What's up?<|tool_call>call:get_time{{city:{Q}Paris{Q}}}<tool_call|>",
     "", "What's up?", [("get_time", {"city": "Paris"})]),
    (f"<|tool_call>call:a{{city:{Q}London{Q}}}<tool_call|><|tool_call>call:b{{n:42,ok:true,"
     f"xs:[1,{Q}two{Q}],d:{{k:null}}}}<tool_call|>",
     "", "", [("a", {"city": "London"}),
              ("b", {"n": 42, "ok": True, "xs": [1, "two"], "d": {"k": None}})]),
]  # fmt: skip


@pytest.mark.parametrize(("text", "reasoning", "content", "calls"), CASES)
def test_whole_and_split_at_every_position(
    text: str, reasoning: str, content: str, calls: list[tuple[str, Any]]
) -> None:
    assert_output_parses_to(PARSER, text, reasoning=reasoning, content=content, calls=calls)


@pytest.mark.parametrize(
    "text",
    ["<|tool_call>call:f{city:Paris}<tool_call|>",  # an unquoted string
     "<|tool_call>call:f{city:<|\"|>Paris}<tool_call|>",
     "<|tool_call>call:f{a:1"],
)  # fmt: skip
def test_malformed_calls_are_text(text: str) -> None:
    message = PARSER.whole(text)
    assert (message.content, message.tool_calls) == (text, [])
