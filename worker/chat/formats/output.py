"""One request's reading of the model's output: reasoning, content and tool calls, whole or
streamed (docs/tool-calls.md)."""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass, field, replace
from typing import Protocol

from worker.chat.formats.message import (
    MessageDelta,
    ParsedMessage,
    ToolCall,
    message_delta,
    new_call_id,
)
from worker.chat.formats.reasoning import ThinkingTags, split_reasoning
from worker.chat.formats.scanning import MalformedToolCall, held_back

__all__ = ["OutputParser", "OutputStream", "ToolSyntax"]


class ToolSyntax(Protocol):
    def parse(self, text: str, partial: bool) -> ParsedMessage:
        """Content and tool calls in ``text`` (after any thinking); :class:`MalformedToolCall`
        when the model opened a call it did not write out correctly."""
        ...


@dataclass(frozen=True, slots=True)
class OutputParser:
    tools: ToolSyntax | None = None  # None: the request has no tools, or tool_choice none
    thinking: ThinkingTags | None = None  # None: reasoning stays in the content
    thinking_open: bool = False  # the prompt ended by opening the thinking
    reasoning_in_content: bool = False  # deepseek-legacy: the thinking stays in content too
    content_markers: tuple[str, ...] = ()  # Command R7B's <|START_RESPONSE|>…: dropped

    def parse(self, text: str, partial: bool) -> ParsedMessage:
        """The message in ``text``; a tool call the model got wrong leaves its text as content.

        ``partial``: the text is a stream's prefix, and nothing that may still change is given.
        """
        reasoning, rest = "", text
        if self.thinking is not None:
            reasoning, rest = split_reasoning(text, self.thinking, self.thinking_open, partial)
        message = ParsedMessage(content=rest)
        if self.tools is not None:
            with suppress(MalformedToolCall):
                message = self.tools.parse(rest, partial)
        message.reasoning = reasoning or message.reasoning  # Harmony splits its own
        if self.content_markers:
            content = message.content
            if partial:
                content = content[: held_back(content, self.content_markers)]
            for marker in self.content_markers:
                content = content.replace(marker, "")
            message.content = content
        if self.reasoning_in_content and reasoning:
            message.content = text[: len(text) - len(rest)] + message.content
        return message

    def whole(self, text: str) -> ParsedMessage:
        """A finished answer, its tool calls given ids."""
        message = self.parse(text, partial=False)
        message.tool_calls = [_with_id(call) for call in message.tool_calls]
        return message


def _with_id(call: ToolCall) -> ToolCall:
    return call if call.id else replace(call, id=new_call_id())


@dataclass(slots=True)
class OutputStream:
    """A streamed answer: each piece of text in, what the client has not seen yet out."""

    parser: OutputParser
    _text: str = ""
    _sent: ParsedMessage = field(default_factory=ParsedMessage)

    def feed(self, piece: str) -> MessageDelta:
        self._text += piece
        return self._advance(self.parser.parse(self._text, partial=True))

    def finish(self) -> MessageDelta:
        """The rest, once the generation is over; the whole answer is then :attr:`sent`."""
        return self._advance(self.parser.parse(self._text, partial=False))

    @property
    def sent(self) -> ParsedMessage:
        return self._sent

    def _advance(self, now: ParsedMessage) -> MessageDelta:
        before = self._sent
        for index, call in enumerate(now.tool_calls):
            if index < len(before.tool_calls):
                call.id = before.tool_calls[index].id
        delta = message_delta(before, now)
        calls = [ToolCall(c.name, c.arguments, c.id) for c in before.tool_calls]
        for index, call in delta.tool_calls:
            if index < len(calls):
                calls[index].arguments += call.arguments
            else:
                call.id = call.id or new_call_id()
                calls.append(ToolCall(call.name, call.arguments, call.id))
        self._sent = ParsedMessage(
            before.content + delta.content, before.reasoning + delta.reasoning, calls
        )
        return delta
