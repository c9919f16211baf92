"""gpt-oss's Harmony format: the answer as messages on channels, tool calls addressed to
``functions.NAME`` (as llama.cpp's ``common_chat_params_init_gpt_oss`` reads it).

    <|channel|>analysis<|message|>thinking<|end|>
    <|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{…}
    <|start|>assistant<|channel|>final<|message|>answer

``analysis`` is the thinking, ``final`` and ``commentary`` the content, and a message with a
``to=functions.f`` recipient (in its role or its channel header) a call of ``f``. The format
frames every answer, so it is read whether or not the request has tools. Its grammar is
llama.cpp's (``common/parsers/gpt_oss.cpp``): one call per answer, the arguments held to the
tool's schema; with ``required``, thinking and preamble messages may come first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from worker.chat.formats.gbnf import (
    GAP_RULE,
    ToolGrammar,
    argument_rules,
    choice,
    literal,
    text_without,
)
from worker.chat.formats.message import ParsedMessage, ToolCall
from worker.chat.formats.own_shape.framed import FramedSyntax
from worker.chat.formats.reasoning import ThinkingTags
from worker.chat.formats.scanning import arguments_object
from worker.sampling.schema_grammar import SchemaRules

__all__ = ["GPT_OSS", "HarmonySyntax"]

_RECIPIENT = re.compile(r"to=functions\.([^\s<]+)")
_CHANNEL = re.compile(r"<\|channel\|>(\w+)")
# llama.cpp's triggers, the first two for a call at the very start of the answer.
_TRIGGERS = (
    r"^\s+to$",
    r"^<\|channel\|>(?:commentary|analysis)\s+to=functions$",
    r"<\|start\|>assistant(\s+to)",
    r"<\|start\|>assistant(<\|channel\|>(?:commentary|analysis)\s+to)",
)


@dataclass(frozen=True, slots=True)
class HarmonySyntax(FramedSyntax):
    split_reasoning: bool = True  # False (reasoning_format none): analysis stays in content
    frames_answer: ClassVar[bool] = True
    format_name: ClassVar[str] = "Harmony"
    ends: ClassVar[tuple[str, ...]] = ("<|end|>", "<|call|>", "<|return|>")

    def with_reasoning(self, split: bool) -> HarmonySyntax:
        return replace(self, split_reasoning=split)

    def grammar(
        self,
        tools: list[dict[str, Any]],
        *,
        lazy: bool,
        parallel: bool,
        thinking: ThinkingTags | None = None,
    ) -> ToolGrammar:
        schemas = SchemaRules()
        calls = []
        for name, args in argument_rules(schemas, tools):
            recipient = literal(f" to=functions.{name}")
            calls.append(f'{recipient} channel constraint "<|message|>" {args}')
            calls.append(f'channel {recipient} constraint "<|message|>" {args}')
        rules = [
            schemas.gbnf(),
            GAP_RULE,
            'channel ::= "<|channel|>" ("commentary" | "analysis")',
            'constraint ::= (gap "<|constrain|>"? [A-Za-z0-9_-]+)?',
            f"tool-call ::= {choice(calls)}",
        ]
        if lazy:  # gpt-oss makes one call per answer, whatever ``parallel`` says
            return ToolGrammar("\n".join([*rules, "root ::= tool-call"]), _TRIGGERS)
        # Thinking and preambles may come first, each its own message, as llama.cpp allows.
        rules += [
            f"message-text ::= {text_without('<|end|>')}",
            'stray ::= ("<|channel|>commentary" " to=assistant"?)?',
            'analysis ::= stray "<|channel|>analysis<|message|>" message-text "<|end|>"',
            'preamble ::= "<|channel|>commentary<|message|>" message-text "<|end|>"',
            'root ::= ((analysis | preamble) "<|start|>assistant")* tool-call',
        ]
        return ToolGrammar("\n".join(rules), ())

    def _message(self, head: str, body: str, end: str, open_: bool, message: ParsedMessage) -> None:
        recipient = _RECIPIENT.search(head)
        if recipient is not None:
            self._call(recipient.group(1), body, complete=bool(end) or not open_, message=message)
            return
        channel = _CHANNEL.search(head)
        if channel is not None and channel.group(1) == "analysis":
            self._thinking(head, body, end, message)
            return
        message.content += body

    def _framed(self, head: str, message: ParsedMessage) -> bool:
        return bool(message.tool_calls or message.content) or _CHANNEL.search(head) is not None

    @staticmethod
    def _call(name: str, body: str, complete: bool, message: ParsedMessage) -> None:
        arguments = body.strip()
        if complete:
            arguments_object(arguments)  # checked; sent as the model wrote it
        message.tool_calls.append(ToolCall(name, arguments))


GPT_OSS = HarmonySyntax()
