"""A model's output fed to the streaming parser in every way a stream may cut it.

As llama.cpp's test-chat does, a parser test checks an output whole, cut in two at every
character position, and one character at a time: the message a client ends up with must not
depend on where the pieces break.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from worker.chat.formats import OutputParser, OutputStream, ParsedMessage

__all__ = ["assert_output_parses_to", "calls_of", "every_split", "streamed"]


def every_split(text: str) -> list[list[str]]:
    """The text in one piece, cut in two at every position, and one character a piece."""
    return [[text], *([text[:cut], text[cut:]] for cut in range(len(text) + 1)), list(text)]


def streamed(parser: OutputParser, pieces: Iterable[str]) -> ParsedMessage:
    """The message a client ends up with when the output arrives in these pieces."""
    stream = OutputStream(parser)
    for piece in pieces:
        stream.feed(piece)
    stream.finish()
    return stream.sent


def calls_of(message: ParsedMessage) -> list[tuple[str, Any]]:
    """Each tool call as its name and its decoded arguments."""
    return [(call.name, json.loads(call.arguments)) for call in message.tool_calls]


def assert_output_parses_to(
    parser: OutputParser,
    text: str,
    *,
    reasoning: str = "",
    content: str = "",
    calls: Sequence[tuple[str, Any]] = (),
) -> None:
    """The output gives this message whole, and streamed however :func:`every_split` cuts it."""
    expected = (reasoning, content, list(calls))
    whole = parser.whole(text)
    assert (whole.reasoning, whole.content, calls_of(whole)) == expected, "whole"
    for pieces in every_split(text):
        sent = streamed(parser, pieces)
        assert (sent.reasoning, sent.content, calls_of(sent)) == expected, pieces
