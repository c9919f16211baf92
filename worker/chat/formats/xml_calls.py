"""Tool-call syntaxes with one tag per argument: Qwen3-Coder, GLM 4.5+, MiniMax M2.

The arguments are rebuilt as a JSON object. A parameter whose schema says string is a JSON
string; any other value is read as JSON when it parses, else kept as a string (llama.cpp does
the same). While streaming, a string value is sent as it grows, so pieces add up to the object.
The grammar allows any text without ``</`` as a value rather than each parameter's schema.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from worker.chat.formats.gbnf import ToolGrammar, functions, literal, regex_escape
from worker.chat.formats.message import ParsedMessage, ToolCall
from worker.chat.formats.reasoning import ThinkingTags
from worker.chat.formats.scanning import MalformedToolCall, held_back, may_open
from worker.chat.formats.syntax import NativeSyntax
from worker.chat.formats.tool_grammar import ToolSection

__all__ = ["XmlToolSyntax"]

# An XML argument value: any text that does not close a tag.
_XML_VALUE = 'xml-value ::= ([^<] | "<" [^/])*'


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _is_string(param: re.Match[str], key: str, strings: frozenset[str]) -> bool:
    """Whether a value is a string: as the model says (DeepSeek's ``string="true"``), else as
    the tool's schema says."""
    said = param.groupdict().get("string")
    return said == "true" if said is not None else key in strings


def _trim(raw: str) -> str:
    """One leading and one trailing newline are the format's, not the value's."""
    raw = raw[1:] if raw.startswith("\n") else raw
    return raw[:-1] if raw.endswith("\n") else raw


def _param(written: str, key: str, schema: Any) -> str:
    """A parameter's opening tag; ``{string}`` says whether the schema makes it a string."""
    is_string = isinstance(schema, dict) and schema.get("type") == "string"
    return written.replace("{key}", key).replace("{string}", str(is_string).lower())


class _Cut(Exception):
    """The text ends inside the tool calls (a partial stream)."""


@dataclass(frozen=True, slots=True)
class XmlToolSyntax(NativeSyntax):
    trigger: str  # the literal every tool-call section starts with
    call_open: str  # regex for one call's opening (after whitespace), group ``name``
    call_close: str
    param_open: str  # regex for one parameter's opening, group ``key`` (and maybe ``string``)
    param_close: str  # ``{key}`` stands for the parameter's name
    consume_trigger: bool = False  # True: the trigger opens a section of several calls
    call_suffix: str = ""  # literal after each call's close (Qwen3-Coder's </tool_call>)
    section_end: str = ""
    trim_values: bool = True  # Qwen3-Coder writes each value on its own lines
    # How a call is written, for the grammar: ``{name}``/``{key}`` stand for the names,
    # ``{string}`` for true or false by the parameter's schema type.
    write_head: str = ""
    write_param: str = ""
    write_param_end: str = ""
    write_tail: str = ""
    string_params: dict[str, frozenset[str]] = field(default_factory=dict)

    @property
    def markers(self) -> tuple[str, ...]:
        return (self.trigger,)

    def with_tools(self, tools: list[dict[str, Any]]) -> XmlToolSyntax:
        """The same syntax, told which parameters are strings by the request's tools."""
        strings: dict[str, frozenset[str]] = {}
        for tool in tools:
            function = tool.get("function") or {}
            properties = (function.get("parameters") or {}).get("properties") or {}
            strings[function.get("name", "")] = frozenset(
                key
                for key, schema in properties.items()
                if isinstance(schema, dict) and schema.get("type") == "string"
            )
        return replace(self, string_params=strings)

    def grammar(
        self,
        tools: list[dict[str, Any]],
        *,
        lazy: bool,
        parallel: bool,
        thinking: ThinkingTags | None = None,
    ) -> ToolGrammar:
        calls: list[str] = []
        for name, parameters in functions(tools):
            properties = parameters.get("properties") or {}
            params = " | ".join(
                f"{literal(_param(self.write_param, key, schema))} xml-value "
                f"{literal(_param(self.write_param_end, key, schema))}"
                for key, schema in properties.items()
            )
            head = literal(self.write_head.replace("{name}", name))
            body = f"({params})* " if params else ""
            calls.append(f"{head} {body}{literal(self.write_tail)}")
        opening = self.trigger if self.consume_trigger else ""
        section = ToolSection(opening, self.section_end, False, (regex_escape(self.trigger),))
        return section.grammar(_XML_VALUE, calls, lazy=lazy, parallel=parallel, thinking=thinking)

    def parse(self, text: str, partial: bool) -> ParsedMessage:
        start = text.find(self.trigger)
        if start < 0:
            end = held_back(text, self.markers) if partial else len(text)
            return ParsedMessage(content=text[:end])
        calls: list[ToolCall] = []
        try:
            pos = self._calls(text, start, calls, partial)
        except _Cut:
            return ParsedMessage(content=text[:start], tool_calls=calls)
        trailing = text[pos:]
        if partial:
            trailing = trailing[: held_back(trailing, self.markers)]
        return ParsedMessage(content=text[:start] + trailing.strip(), tool_calls=calls)

    def _calls(self, text: str, start: int, calls: list[ToolCall], partial: bool) -> int:
        opener, param = re.compile(self.call_open), re.compile(self.param_open)
        pos = start + (len(self.trigger) if self.consume_trigger else 0)

        def cut(why: str) -> _Cut:
            if not partial:
                raise MalformedToolCall(why)
            return _Cut()

        while True:
            at = _skip(text, pos)
            match = opener.match(text, at)
            if match is None:
                rest = text[at:]
                if self.section_end and rest.startswith(self.section_end):
                    if not calls:
                        raise MalformedToolCall("a tool-call section without a call")
                    return at + len(self.section_end)
                ending = bool(self.section_end) and self.section_end.startswith(rest)
                if not rest or ending or may_open(opener, rest):
                    if calls and not partial and not rest:
                        return pos  # a missing section end at the very end is forgiven
                    raise cut("the output ends inside the tool calls")
                if calls:
                    return pos
                raise MalformedToolCall("a tool call does not open as its format says")
            name = match["name"].strip()
            close = text.find(self.call_close, match.end())
            if close < 0:
                body = text[match.end() :]
                calls.append(ToolCall(name, self._arguments(name, body, param, done=False)))
                raise cut("the output ends inside a tool call")
            body = text[match.end() : close]
            calls.append(ToolCall(name, self._arguments(name, body, param, done=True)))
            pos = close + len(self.call_close)
            if self.call_suffix:
                at = _skip(text, pos)
                if text.startswith(self.call_suffix, at):
                    pos = at + len(self.call_suffix)
                elif at < len(text) and self.call_suffix.startswith(text[at:]):
                    raise cut("the output ends inside a tool call")

    def _arguments(self, name: str, body: str, param: re.Pattern[str], done: bool) -> str:
        """The call's arguments as JSON text; while the call is open, a prefix of it."""
        strings = self.string_params.get(name, frozenset())
        pairs: list[str] = []
        pos = 0
        while (match := param.search(body, pos)) is not None:
            key = match["key"].strip()
            param_close = self.param_close.replace("{key}", key)  # MiniMax M3 closes by name
            close = body.find(param_close, match.end())
            raw = body[match.end() : close if close >= 0 else len(body)]
            if close < 0:
                if done:
                    raise MalformedToolCall(f"parameter {key!r} is not closed")
                growing = raw.lstrip("\n") if self.trim_values else raw
                growing = growing[: held_back(growing, (param_close,))]
                growing = growing.rstrip()  # may yet be the trim before the closing tag
                if _is_string(match, key, strings) and growing:
                    pairs.append(f"{_dump(key)}: {_dump(growing)[:-1]}")
                return "{" + ", ".join(pairs)
            value = _trim(raw) if self.trim_values else raw
            pairs.append(
                f"{_dump(key)}: {_dump(self._value(value, _is_string(match, key, strings)))}"
            )
            pos = close + len(param_close)
        return "{" + ", ".join(pairs) + ("}" if done else "")

    @staticmethod
    def _value(raw: str, is_string: bool) -> Any:
        if is_string:
            return raw
        try:
            return json.loads(raw)
        except ValueError:
            return raw
