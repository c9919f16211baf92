"""Functionary v3.2's recipient lines, on the outputs llama.cpp's test-chat uses."""

from __future__ import annotations

import json
from typing import Any

import pytest

from worker.chat_formats import OutputParser, OutputStream, detect_format
from worker.chat_formats.recipients import FUNCTIONARY_V3_2

CASES: list[tuple[str, str, list[tuple[str, Any]]]] = [
    ("all\nHello, world!\nWhat's up?", "Hello, world!\nWhat's up?", []),
    ('special_function\n{"arg1": 1}', "", [("special_function", {"arg1": 1})]),
    ('all\nLet me check.>>>get_weather\n{"city": "Oslo"}>>>now\n{}',
     "Let me check.", [("get_weather", {"city": "Oslo"}), ("now", {})]),
]  # fmt: skip


@pytest.mark.parametrize(("text", "content", "calls"), CASES)
def test_recipients_whole_and_split_at_every_position(
    text: str, content: str, calls: list[tuple[str, Any]]
) -> None:
    parser = OutputParser(tools=FUNCTIONARY_V3_2)
    whole = parser.whole(text)
    assert (whole.content, [(c.name, json.loads(c.arguments)) for c in whole.tool_calls]) == (
        content,
        calls,
    )
    for pieces in [[text[:cut], text[cut:]] for cut in range(len(text) + 1)] + [list(text)]:
        stream = OutputStream(parser)
        for piece in pieces:
            stream.feed(piece)
        stream.finish()
        got = [(c.name, json.loads(c.arguments)) for c in stream.sent.tool_calls]
        assert (stream.sent.content, got) == (content, calls), pieces


def test_bad_arguments_are_text_and_plain_text_stays_text() -> None:
    bad = "get_weather\n{oops"
    assert OutputParser(tools=FUNCTIONARY_V3_2).whole(bad).content == bad
    assert OutputParser(tools=FUNCTIONARY_V3_2).whole("no recipient").content == "no recipient"


def test_the_template_markers() -> None:
    source = "Respond in this format:\\n>>>${recipient}\\n${content} {{ '>>>all\\n' }}"
    assert detect_format(source).name == "Functionary v3.2"
