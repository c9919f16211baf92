"""Muse Glimmer: the answer as messages to recipients, tool calls as ``<atem:…>`` XML (as
llama.cpp's ``common_chat_params_init_muse_glimmer`` reads it)::

    <|start|>assistant to=self<|message|>thinking<|eom|>
    <|start|>assistant to=get_weather<|message|><atem:function_calls>
    <atem:invoke name="get_weather"><atem:parameter name="city">Oslo</atem:parameter>
    </atem:invoke></atem:function_calls><|eom|>
    <|start|>assistant to=user<|message|>answer<|eot|>

``self`` is the thinking, ``user`` (or no recipient) the content, any other recipient a
message holding tool calls. The prompt ends with ``<|start|>assistant``, so the answer starts
with the first message's recipient. The format frames every answer, so it is read whether or
not the request has tools.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from worker.chat.formats.message import ParsedMessage
from worker.chat.formats.scanning import MalformedToolCall, held_back, marked_segments
from worker.chat.formats.xml_calls import XmlToolSyntax

__all__ = ["MUSE_CALLS", "MUSE_GLIMMER", "MuseSyntax"]

START = "<|start|>assistant"
_MESSAGE = "<|message|>"
_ENDS = ("<|eom|>", "<|eot|>")
MUSE_CALLS = XmlToolSyntax(
    write_head='<atem:function_calls>\n<atem:invoke name="{name}">\n',
    write_param='<atem:parameter name="{key}">',
    write_param_end="</atem:parameter>\n",
    write_tail="</atem:invoke>\n</atem:function_calls>",
    trigger="<atem:function_calls>",
    consume_trigger=True,
    call_open=r'<atem:invoke name="(?P<name>[^"]+)">',
    call_close="</atem:invoke>",
    param_open=r'<atem:parameter name="(?P<key>[^"]+)">',
    param_close="</atem:parameter>",
    section_end="</atem:function_calls>",
    trim_values=False,
)


@dataclass(frozen=True, slots=True)
class MuseSyntax:
    calls: XmlToolSyntax = MUSE_CALLS
    split_reasoning: bool = True  # False (reasoning_format none): the thinking stays in content

    def with_tools(self, tools: list[dict[str, Any]]) -> MuseSyntax:
        return replace(self, calls=self.calls.with_tools(tools))

    def parse(self, text: str, partial: bool) -> ParsedMessage:
        message = ParsedMessage()
        for segment, open_ in marked_segments(text, START, partial):
            self._segment(segment, open_, message)
        return message

    def _segment(self, segment: str, open_: bool, message: ParsedMessage) -> None:
        head, found, rest = segment.partition(_MESSAGE)
        if not found:
            if open_ or not segment.strip():
                return  # the header is still arriving
            if message.tool_calls or message.content or message.reasoning or "to=" in head:
                raise MalformedToolCall("a Muse message without <|message|>")
            message.content += segment  # plain text, not written as the format says
            return
        recipient = head.strip()
        if recipient and not recipient.startswith("to="):
            raise MalformedToolCall("a Muse message header without its recipient")
        recipient = recipient.removeprefix("to=").strip() or "user"
        body, end = rest, ""
        for marker in _ENDS:
            if marker in body:
                body, end = body.split(marker, 1)[0], marker
                break
        if not end and open_:
            body = body[: held_back(body, _ENDS)]
        if recipient == "self":
            if self.split_reasoning:
                message.reasoning += body
            else:
                message.content += f"{head}{_MESSAGE}{body}{end}"
            return
        if recipient == "user":
            message.content += body
            return
        parsed = self.calls.parse(body, partial=open_ and not end)
        if parsed.content.strip() or (not parsed.tool_calls and not open_):
            raise MalformedToolCall("a message to a tool holds no tool call")
        message.tool_calls += parsed.tool_calls


MUSE_GLIMMER = MuseSyntax()
