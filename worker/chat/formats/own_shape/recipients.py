"""Functionary v3.2: every message names its recipient (llama.cpp's
``common_chat_params_init_functionary_v3_2`` reads it the same way).

The prompt ends with ``>>>``, so the answer starts with a recipient line::

    all
    Some text for the user.>>>get_weather
    {"city": "Oslo"}

``all`` is the content; any other recipient is a call of that function, its arguments the JSON
that follows. The format frames every answer, so it is read whether or not the request has tools.
Its grammar is triggered by a recipient line naming a function and holds the arguments to the
tool's schema; with ``required`` an ``all`` message may come first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from worker.chat.formats.gbnf import (
    ToolGrammar,
    argument_rules,
    choice,
    literal,
    regex_escape,
    text_without,
)
from worker.chat.formats.message import ParsedMessage, ToolCall
from worker.chat.formats.reasoning import ThinkingTags
from worker.chat.formats.scanning import MalformedToolCall, arguments_object, held_back
from worker.chat.formats.syntax import NativeSyntax
from worker.sampling.schema_grammar import SchemaRules

__all__ = ["FUNCTIONARY_V3_2", "RecipientSyntax"]

_NEXT = ">>>"


@dataclass(frozen=True, slots=True)
class RecipientSyntax(NativeSyntax):
    everyone: str = "all"  # the recipient whose messages are content
    frames_answer: ClassVar[bool] = True

    def grammar(
        self,
        tools: list[dict[str, Any]],
        *,
        lazy: bool,
        parallel: bool,
        thinking: ThinkingTags | None = None,
    ) -> ToolGrammar:
        schemas = SchemaRules()
        calls = [
            f"{literal(name + chr(10))} {args}" for name, args in argument_rules(schemas, tools)
        ]
        repeat = f' ("{_NEXT}" tool-call)*' if parallel else ""
        rules = [schemas.gbnf(), f"tool-call ::= {choice(calls)}"]
        if lazy:
            # A call opens the answer (the prompt ends with ">>>") or follows ">>>" later.
            everyone = regex_escape(self.everyone)
            triggers = (rf"^(?!{everyone}\n)([\w.-]+\n)", rf"(>>>)(?!{everyone}\n)[\w.-]+\n")
            root = f'root ::= "{_NEXT}"? tool-call{repeat}'
            return ToolGrammar("\n".join([*rules, root]), triggers)
        content = f'{literal(self.everyone + chr(10))} {text_without(_NEXT)} "{_NEXT}"'
        return ToolGrammar("\n".join([*rules, f"root ::= ({content})? tool-call{repeat}"]), ())

    def parse(self, text: str, partial: bool) -> ParsedMessage:
        message = ParsedMessage()
        segments = text.split(_NEXT)
        for index, segment in enumerate(segments):
            last = index == len(segments) - 1
            if last and partial:
                segment = segment[: held_back(segment, (_NEXT,))]
            recipient, newline, body = segment.partition("\n")
            if not newline:
                if last and partial:
                    return message  # the recipient line is still arriving
                if index == 0 and len(segments) == 1:
                    message.content = text  # not written as the format says: plain text
                    return message
                raise MalformedToolCall("a message without its recipient line")
            if recipient.strip() == self.everyone:
                message.content += body
                continue
            arguments = body.strip()
            if not (last and partial):
                arguments_object(arguments)  # checked; sent as the model wrote it
            message.tool_calls.append(ToolCall(recipient.strip(), arguments))
        return message


FUNCTIONARY_V3_2 = RecipientSyntax()
