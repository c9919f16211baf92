"""LFM2's Python-style tool calls, on the outputs llama.cpp's test-chat uses."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.output_splits import assert_output_parses_to
from worker.chat.formats import OutputParser, ThinkingTags, detect_format
from worker.chat.formats.own_shape.pythonic import LFM2

PARSER = OutputParser(tools=LFM2, thinking=ThinkingTags())
CASES: list[tuple[str, str, list[tuple[str, Any]]]] = [
    ("Hello, world!", "Hello, world!", []),
    ('<|tool_call_start|>[get_time(city="XYZCITY")]<|tool_call_end|>', "",
     [("get_time", {"city": "XYZCITY"})]),
    ("<|tool_call_start|>[toggle(enabled=True), set_nullable(value=None, n=-2)]<|tool_call_end|>",
     "", [("toggle", {"enabled": True}), ("set_nullable", {"value": None, "n": -2})]),
    ('Let me check.<|tool_call_start|>[set_config(config={"enabled": true, "note": null})]'
     "<|tool_call_end|>", "Let me check.",
     [("set_config", {"config": {"enabled": True, "note": None}})]),
    ('<|tool_call_start|>[Calendar.create_event(title="demo", who=["Alice", "Bob"])]'
     "<|tool_call_end|>", "",
     [("Calendar.create_event", {"title": "demo", "who": ["Alice", "Bob"]})]),
]  # fmt: skip


@pytest.mark.parametrize(("text", "content", "calls"), CASES)
def test_whole_and_split_at_every_position(
    text: str, content: str, calls: list[tuple[str, Any]]
) -> None:
    assert_output_parses_to(PARSER, text, content=content, calls=calls)


@pytest.mark.parametrize(
    "text",
    ["<|tool_call_start|>[f(1)]<|tool_call_end|>",  # positional
     "<|tool_call_start|>[f(x=open('/etc/passwd'))]<|tool_call_end|>",  # not a literal
     "<|tool_call_start|>[f(x=1]<|tool_call_end|>",
     "<|tool_call_start|>[f(x=1)]"],
)  # fmt: skip
def test_anything_but_literal_keyword_calls_is_text(text: str) -> None:
    message = PARSER.whole(text)
    assert (message.content, message.tool_calls) == (text, [])


def test_the_template_markers() -> None:
    assert detect_format("<|tool_list_start|>[{{ tools }}]<|tool_list_end|>").name == "LFM2"
    assert detect_format("List of tools: [{{ tools }}]").name == "LFM2.5"
