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
not the request has tools. Its grammar is triggered by a message to a recipient other than
``self`` or ``user``, as llama.cpp's; with ``required`` thinking messages may come first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from worker.chat.formats.gbnf import GAP_RULE, ToolGrammar, choice, functions, literal, text_without
from worker.chat.formats.message import ParsedMessage
from worker.chat.formats.own_shape.framed import START, FramedSyntax
from worker.chat.formats.reasoning import ThinkingTags
from worker.chat.formats.scanning import MalformedToolCall
from worker.chat.formats.xml_calls import XmlToolSyntax

__all__ = ["MUSE_CALLS", "MUSE_GLIMMER", "MuseSyntax"]

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
# llama.cpp's trigger: a message to a recipient other than self or user.
_TRIGGER = (
    r"(?:^|<\|start\|>assistant)( to=(?!self<\|message\|>)(?!user<\|message\|>)[^<]*?"
    r"<\|message\|>)"
)


@dataclass(frozen=True, slots=True)
class MuseSyntax(FramedSyntax):
    calls: XmlToolSyntax = MUSE_CALLS
    split_reasoning: bool = True  # False (reasoning_format none): the thinking stays in content
    frames_answer: ClassVar[bool] = True
    format_name: ClassVar[str] = "Muse"
    ends: ClassVar[tuple[str, ...]] = ("<|eom|>", "<|eot|>")

    def with_tools(self, tools: list[dict[str, Any]]) -> MuseSyntax:
        return replace(self, calls=self.calls.with_tools(tools))

    def with_reasoning(self, split: bool) -> MuseSyntax:
        return replace(self, split_reasoning=split)

    def grammar(
        self,
        tools: list[dict[str, Any]],
        *,
        lazy: bool,
        parallel: bool,
        thinking: ThinkingTags | None = None,
    ) -> ToolGrammar:
        calls = []
        for name, parameters in functions(tools):
            params = " | ".join(
                f"{literal(self.calls.write_param.replace('{key}', key))} muse-value "
                '"</atem:parameter>"'
                for key in parameters.get("properties") or {}
            )
            body = f"(( {params} ) gap)* " if params else ""
            head = f'"<atem:invoke name=\\"" {literal(name)} "\\">" gap'
            calls.append(
                f'" to=" [^<]* "<|message|><atem:function_calls>" gap {head} {body}'
                '"</atem:invoke>" gap "</atem:function_calls>"'
            )
        repeat = f' ("<|eom|>" {literal(START)} tool-call)*' if parallel else ""
        rules = [GAP_RULE, 'muse-value ::= ([^<] | "<" [^/])*', f"tool-call ::= {choice(calls)}"]
        if lazy:
            return ToolGrammar("\n".join([*rules, f"root ::= tool-call{repeat}"]), (_TRIGGER,))
        thinking_message = (
            f'" to=self<|message|>" {text_without("<|eom|>")} "<|eom|>" {literal(START)}'
        )
        root = f"root ::= ({thinking_message})* tool-call{repeat}"
        return ToolGrammar("\n".join([*rules, root]), ())

    def _message(self, head: str, body: str, end: str, open_: bool, message: ParsedMessage) -> None:
        recipient = head.strip()
        if recipient and not recipient.startswith("to="):
            raise MalformedToolCall("a Muse message header without its recipient")
        recipient = recipient.removeprefix("to=").strip() or "user"
        if recipient == "self":
            self._thinking(head, body, end, message)
            return
        if recipient == "user":
            message.content += body
            return
        parsed = self.calls.parse(body, partial=open_ and not end)
        if parsed.content.strip() or (not parsed.tool_calls and not open_):
            raise MalformedToolCall("a message to a tool holds no tool call")
        message.tool_calls += parsed.tool_calls

    def _framed(self, head: str, message: ParsedMessage) -> bool:
        return bool(message.tool_calls or message.content or message.reasoning) or "to=" in head


MUSE_GLIMMER = MuseSyntax()
