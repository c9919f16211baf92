"""Gemma 4's tool calls: ``<|tool_call>call:NAME{key:value,…}<tool_call|>`` (llama.cpp's
``common_chat_params_init_gemma4``).

The arguments are Gemma's own notation, not JSON: keys are bare, strings are quoted with
``<|"|>``, numbers, booleans, ``null``, arrays and nested dicts are as in JSON. They are
converted to a JSON object. A call is given to a stream by name as soon as it opens and its
arguments once it closes (a prefix of converted notation is not a prefix of the JSON). The
grammar, triggered by ``<|tool_call>``, holds the arguments to Gemma's notation, not to the
tool's schema, as llama.cpp's does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from worker.chat.formats.gbnf import (
    GAP_RULE,
    ToolGrammar,
    choice,
    functions,
    literal,
    regex_escape,
    text_without,
)
from worker.chat.formats.message import ParsedMessage, ToolCall
from worker.chat.formats.reasoning import ThinkingTags
from worker.chat.formats.scanning import MalformedToolCall, held_back
from worker.chat.formats.syntax import NativeSyntax

__all__ = ["GEMMA4", "Gemma4Syntax"]

_OPEN, _CLOSE, _QUOTE = "<|tool_call>call:", "<tool_call|>", '<|"|>'
_GRAMMAR_VALUES = (
    'gemma4-string ::= "<|\\"|>" ([^<] | "<" [^|])* "<|\\"|>"',
    'gemma4-number ::= "-"? [0-9]+ ("." [0-9]+)? ([eE] [-+]? [0-9]+)?',
    'gemma4-kv ::= [^:}]+ ":" gap gemma4-value',
    'gemma4-dict ::= "{" gap ("}" | gemma4-kv ("," gap gemma4-kv)* gap "}")',
    'gemma4-array ::= "[" gap ("]" | gemma4-value ("," gap gemma4-value)* gap "]")',
    "gemma4-value ::= gemma4-string | gemma4-dict | gemma4-array | gemma4-number"
    ' | "true" | "false" | "null"',
)


class _Reader:
    """Gemma's notation, read into Python values."""

    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def fail(self) -> MalformedToolCall:
        return MalformedToolCall(f"bad Gemma 4 arguments at {self.pos}")

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def value(self) -> Any:
        self.skip()
        text = self.text
        if text.startswith(_QUOTE, self.pos):
            end = text.find(_QUOTE, self.pos + len(_QUOTE))
            if end < 0:
                raise self.fail()
            found, self.pos = text[self.pos + len(_QUOTE) : end], end + len(_QUOTE)
            return found
        if text.startswith("{", self.pos):
            return self.dict()
        if text.startswith("[", self.pos):
            return self.array()
        start = self.pos
        while self.pos < len(text) and text[self.pos] not in ",}]":
            self.pos += 1
        token = text[start : self.pos].strip()
        try:
            return json.loads(token)
        except ValueError:
            raise self.fail() from None

    def dict(self) -> dict[str, Any]:
        self.pos += 1
        found: dict[str, Any] = {}
        self.skip()
        if self.text.startswith("}", self.pos):
            self.pos += 1
            return found
        while True:
            self.skip()
            if self.text.startswith(_QUOTE, self.pos):
                key = self.value()
            else:
                colon = self.text.find(":", self.pos)
                if colon < 0:
                    raise self.fail()
                key, self.pos = self.text[self.pos : colon].strip(), colon
            self.skip()
            if not self.text.startswith(":", self.pos):
                raise self.fail()
            self.pos += 1
            found[key] = self.value()
            self.skip()
            if self.text.startswith("}", self.pos):
                self.pos += 1
                return found
            if not self.text.startswith(",", self.pos):
                raise self.fail()
            self.pos += 1

    def array(self) -> list[Any]:
        self.pos += 1
        found: list[Any] = []
        self.skip()
        if self.text.startswith("]", self.pos):
            self.pos += 1
            return found
        while True:
            found.append(self.value())
            self.skip()
            if self.text.startswith("]", self.pos):
                self.pos += 1
                return found
            if not self.text.startswith(",", self.pos):
                raise self.fail()
            self.pos += 1


def gemma_arguments(notation: str) -> str:
    """``{city:<|"|>Paris<|"|>}`` as JSON text."""
    reader = _Reader(notation.strip())
    if not reader.text.startswith("{"):
        raise reader.fail()
    value = reader.dict()
    reader.skip()
    if reader.pos != len(reader.text):
        raise reader.fail()
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Gemma4Syntax(NativeSyntax):
    def grammar(
        self,
        tools: list[dict[str, Any]],
        *,
        lazy: bool,
        parallel: bool,
        thinking: ThinkingTags | None = None,
    ) -> ToolGrammar:
        calls = [f'"<|tool_call>call:" {literal(name)} gemma4-dict "<tool_call|>"'
                 for name, _ in functions(tools)]  # fmt: skip
        repeat = " tool-call*" if parallel else ""
        rules = [GAP_RULE, *_GRAMMAR_VALUES, f"tool-call ::= {choice(calls)}"]
        if lazy:
            return ToolGrammar(
                "\n".join([*rules, f"root ::= tool-call{repeat}"]), (regex_escape("<|tool_call>"),)
            )
        thought = f'("<|channel>thought" {text_without("<channel|>")} "<channel|>")?'
        root = f'root ::= "<|turn>model\\n"? {thought} tool-call{repeat}'
        return ToolGrammar("\n".join([*rules, root]), ())

    def parse(self, text: str, partial: bool) -> ParsedMessage:
        start = text.find(_OPEN)
        if start < 0:
            end = held_back(text, (_OPEN,)) if partial else len(text)
            return ParsedMessage(content=text[:end])
        message = ParsedMessage(content=text[:start])
        pos = start
        while text.startswith(_OPEN, pos):
            brace = text.find("{", pos + len(_OPEN))
            close = text.find(_CLOSE, pos)
            name_end = brace if brace >= 0 else len(text)
            name = text[pos + len(_OPEN) : name_end]
            if close < 0:
                if not partial:
                    raise MalformedToolCall("the output ends inside a tool call")
                if brace >= 0:
                    message.tool_calls.append(ToolCall(name.strip(), ""))
                return message
            if brace < 0 or brace > close:
                raise MalformedToolCall("a Gemma 4 call without arguments")
            arguments = gemma_arguments(text[brace:close])
            message.tool_calls.append(ToolCall(name.strip(), arguments))
            pos = close + len(_CLOSE)
            while pos < len(text) and text[pos].isspace():
                pos += 1
        trailing = text[pos:]
        if partial:
            trailing = trailing[: held_back(trailing, (_OPEN,))]
        message.content += trailing
        return message


GEMMA4 = Gemma4Syntax()
