"""Muse Glimmer's messages to recipients, on outputs written as its template writes them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.output_splits import assert_output_parses_to
from worker.chat.formats import OutputParser, detect_format
from worker.chat.formats.own_shape.muse import MUSE_GLIMMER, MuseSyntax

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    }
]
PARSER = OutputParser(tools=MUSE_GLIMMER.with_tools(TOOLS))
CALL = (
    '<atem:function_calls>\n<atem:invoke name="get_weather">\n'
    '<atem:parameter name="city">Oslo</atem:parameter>\n'
    '<atem:parameter name="days">2</atem:parameter>\n</atem:invoke>\n</atem:function_calls>'
)
CASES: list[tuple[str, str, str, list[tuple[str, Any]]]] = [
    (" to=user<|message|>Hello.<|eot|>", "", "Hello.", []),
    ("<|message|>Hello.", "", "Hello.", []),
    ("Just text.", "", "Just text.", []),
    (" to=self<|message|>Think.<|eom|><|start|>assistant to=user<|message|>Hi.<|eot|>",
     "Think.", "Hi.", []),
    (f" to=get_weather<|message|>{CALL}<|eom|>", "", "",
     [("get_weather", {"city": "Oslo", "days": 2})]),
    (f" to=self<|message|>Check.<|eom|><|start|>assistant to=get_weather<|message|>{CALL}"
     f"<|eom|><|start|>assistant to=get_weather<|message|>{CALL}", "Check.", "",
     [("get_weather", {"city": "Oslo", "days": 2})] * 2),
]  # fmt: skip


@pytest.mark.parametrize(("text", "reasoning", "content", "calls"), CASES)
def test_whole_and_split_at_every_position(
    text: str, reasoning: str, content: str, calls: list[tuple[str, Any]]
) -> None:
    assert_output_parses_to(PARSER, text, reasoning=reasoning, content=content, calls=calls)


@pytest.mark.parametrize(
    "text",
    [" to=get_weather<|message|>not a call<|eom|>",
     ' to=get_weather<|message|><atem:function_calls><atem:invoke name="x">',
     " from=me<|message|>Hello."],
)  # fmt: skip
def test_a_malformed_message_is_text(text: str) -> None:
    message = PARSER.whole(text)
    assert (message.content, message.tool_calls) == (text, [])


def test_the_template_markers() -> None:
    chat_format = detect_format("{{ '<atem:function_calls>' }}<|eom|>")
    assert (chat_format.name, chat_format.tools) == ("Muse Glimmer", MuseSyntax())
