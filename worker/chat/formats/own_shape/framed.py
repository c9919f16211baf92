"""Answers framed as messages, as gpt-oss's Harmony and Muse Glimmer write them::

    <|start|>assistant HEADER<|message|>BODY END

Each message opens with ``<|start|>assistant`` (the prompt's end opens the first), its header
runs to ``<|message|>`` and its body to one of the format's end markers. Cutting an answer into
messages, holding back a streamed tail that may begin a marker, and keeping or splitting off the
thinking are the same for both formats and written here once; what a header means (Harmony's
channels and ``to=functions.f``, Muse's recipients) is each format's own.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

from worker.chat.formats.message import ParsedMessage
from worker.chat.formats.scanning import MalformedToolCall, held_back, marked_segments
from worker.chat.formats.syntax import NativeSyntax

__all__ = ["MESSAGE", "START", "FramedSyntax"]

START = "<|start|>assistant"
MESSAGE = "<|message|>"


class FramedSyntax(NativeSyntax):
    """A syntax whose every answer is messages framed by ``START``, ``MESSAGE`` and ``ends``."""

    __slots__ = ()  # the formats are slotted dataclasses

    format_name: ClassVar[str]  # as errors name the format
    ends: ClassVar[tuple[str, ...]]  # the markers that end a message's body
    split_reasoning: bool  # False (reasoning_format none): the thinking stays in content

    def parse(self, text: str, partial: bool) -> ParsedMessage:
        message = ParsedMessage()
        for segment, open_ in marked_segments(text, START, partial):
            head, found, rest = segment.partition(MESSAGE)
            if found:
                body, end = _body(rest, self.ends, open_)
                self._message(head, body, end, open_, message)
            elif not open_ and segment.strip():  # an open one's header is still arriving
                if self._framed(head, message):
                    raise MalformedToolCall(f"a {self.format_name} message without {MESSAGE}")
                message.content += segment  # plain text, not written as the format says
        return message

    @abstractmethod
    def _message(self, head: str, body: str, end: str, open_: bool, message: ParsedMessage) -> None:
        """Adds one message to ``message``: its header ``head``, its ``body`` and the marker that
        ended it (``end``, empty while ``open_``, a stream's last message, is still arriving)."""

    @abstractmethod
    def _framed(self, head: str, message: ParsedMessage) -> bool:
        """Whether ``head``, a whole segment without ``MESSAGE``, is a message of the format
        written wrong (so an error) rather than an answer that is plain text."""

    def _thinking(self, head: str, body: str, end: str, message: ParsedMessage) -> None:
        if self.split_reasoning:
            message.reasoning += body
        else:
            message.content += f"{head}{MESSAGE}{body}{end}"


def _body(rest: str, ends: tuple[str, ...], open_: bool) -> tuple[str, str]:
    """A message's body and the marker that ended it ("" when none has come yet)."""
    for marker in ends:
        if marker in rest:
            return rest.split(marker, 1)[0], marker
    return (rest[: held_back(rest, ends)] if open_ else rest), ""
