"""Functionary v3.2's recipient lines, on the outputs llama.cpp's test-chat uses."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.output_splits import assert_output_parses_to
from worker.chat.formats import OutputParser, detect_format
from worker.chat.formats.own_shape.recipients import FUNCTIONARY_V3_2

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
    assert_output_parses_to(parser, text, content=content, calls=calls)


def test_bad_arguments_are_text_and_plain_text_stays_text() -> None:
    bad = "get_weather\n{oops"
    assert OutputParser(tools=FUNCTIONARY_V3_2).whole(bad).content == bad
    assert OutputParser(tools=FUNCTIONARY_V3_2).whole("no recipient").content == "no recipient"


def test_the_template_markers() -> None:
    source = "Respond in this format:\\n>>>${recipient}\\n${content} {{ '>>>all\\n' }}"
    assert detect_format(source).name == "Functionary v3.2"
