"""Tool-call syntaxes whose arguments are JSON: Hermes ``<tool_call>``, Mistral ``[TOOL_CALLS]``,
DeepSeek, Kimi K2, Granite, Firefunction, Command R7B, Functionary v3.1 and kin.

Each is described by data (:class:`JsonToolSyntax`): the literal that opens the tool calls, and
either a JSON array of call objects after it, or a run of calls that each open with a pattern
(capturing the function name when the format puts it outside the JSON) and close with a literal.
Argument text is kept as the model wrote it, so streamed pieces add up to the final arguments.
The grammar holds each call to its tool's JSON Schema, with the rules of llama.cpp's schema
converter (Corral's port of it, as for ``json_schema``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from worker.chat.formats.gbnf import ToolGrammar, functions, literal, regex_escape
from worker.chat.formats.message import ParsedMessage, ToolCall
from worker.chat.formats.reasoning import ThinkingTags
from worker.chat.formats.scanning import (
    MalformedToolCall,
    arguments_object,
    held_back,
    json_value,
    may_open,
    named_call_head,
)
from worker.chat.formats.syntax import NativeSyntax
from worker.chat.formats.tool_grammar import ToolSection
from worker.sampling.schema_grammar import SchemaRules

__all__ = ["JsonToolSyntax"]

_KEYED_HEAD = re.compile(r'\{\s*"(?P<name>(?:[^"\\]|\\.)*)"\s*:\s*')


class _Incomplete(Exception):
    """The text ends inside a tool call (only raised while parsing a partial stream)."""

    def __init__(self, call: ToolCall | None) -> None:
        self.call = call


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


@dataclass(frozen=True, slots=True)
class JsonToolSyntax(NativeSyntax):
    trigger: str  # the literal every tool-call section starts with
    consume_trigger: bool = True  # False: the trigger is the start of each call's own head
    # Regex opening each call (groups ``name`` and ``id`` when the format writes them there);
    # None: the calls are a JSON array.
    call_head: str | None = None
    call_tail: str = ""  # literal closing each call
    section_end: str = ""  # literal closing the whole section, when the format has one
    name_keys: tuple[str, ...] = ("name",)
    args_keys: tuple[str, ...] = ("arguments", "parameters")
    id_key: str | None = None  # the key of a model-written call id (Mistral, Command R7B)
    at_start: bool = False  # only a call when the answer opens with the trigger (Llama 3.x)
    name_is_key: bool = False  # each call is {"f": {…}}: the name is the only key (Apertus)
    # How a call is written, for the grammar: ``{name}`` stands for the function's name.
    write_head: str = ""
    write_tail: str = ""

    @property
    def markers(self) -> tuple[str, ...]:
        return (self.trigger,)

    def grammar(
        self,
        tools: list[dict[str, Any]],
        *,
        lazy: bool,
        parallel: bool,
        thinking: ThinkingTags | None = None,
    ) -> ToolGrammar:
        rules = SchemaRules()
        calls = self.call_rules(tools, rules)
        return self.section().grammar(
            rules.gbnf(), calls, lazy=lazy, parallel=parallel, thinking=thinking
        )

    def call_rules(self, tools: list[dict[str, Any]], rules: SchemaRules) -> list[str]:
        """Each tool's call, as GBNF, its schemas' rules added to ``rules``."""
        calls: list[str] = []
        named = "(?P<name>" in (self.call_head or "")
        tail = literal(self.write_tail) if self.write_tail else ""
        for index, (name, parameters) in enumerate(functions(tools)):
            if named:
                args = rules.add(parameters, f"tool-{index}-args")
                head = literal(self.write_head.replace("{name}", name))
                calls.append(f"{head} {args} {tail}".strip())
                continue
            # The call object's keys in the order the models write them.
            arguments = rules.read(parameters, f"tool-{index}")
            properties: dict[str, Any] = {self.name_keys[0]: {"const": name},
                                          self.args_keys[0]: arguments}  # fmt: skip
            if self.name_is_key:
                properties = {name: arguments}
            if self.id_key == "id":  # Mistral Nemo's nine-character call ids, last
                properties["id"] = {"type": "string", "pattern": "^[a-zA-Z0-9]{9}$"}
            elif self.id_key:  # Command R7B's, first
                properties = {self.id_key: {"type": "string"}, **properties}
            call = {"type": "object", "properties": properties, "required": list(properties)}
            body = rules.add(call, f"tool-{index}-call")
            head = literal(self.write_head) if self.write_head else ""
            calls.append(f"{head} {body} {tail}".strip())
        return calls

    def section(self, *more_triggers: str) -> ToolSection:
        """Where the calls sit; ``more_triggers`` also start a lazy grammar (Llama 3.x's
        built-in tools)."""
        trigger = regex_escape(self.trigger)
        if self.at_start:
            trigger = rf"^\s*({trigger})"
        opening = self.trigger if self.consume_trigger else ""
        return ToolSection(
            opening, self.section_end, self.call_head is None, (trigger, *more_triggers)
        )

    def parse(self, text: str, partial: bool) -> ParsedMessage:
        start = text.find(self.trigger)
        if self.at_start and text[:start].strip():
            start = -1
        if start < 0:
            end = held_back(text, self.markers) if partial else len(text)
            return ParsedMessage(content=text[:end])
        calls: list[ToolCall] = []
        try:
            tail = self._calls(text, start, calls)
        except _Incomplete as cut:
            if not partial:
                raise MalformedToolCall("the output ends inside a tool call") from None
            if cut.call is not None:
                calls.append(cut.call)
            return ParsedMessage(content=text[:start], tool_calls=calls)
        trailing = text[tail:]
        if partial:
            trailing = trailing[: held_back(trailing, self.markers)]
        return ParsedMessage(content=text[:start] + trailing.strip(), tool_calls=calls)

    def _calls(self, text: str, pos: int, calls: list[ToolCall]) -> int:
        if self.consume_trigger:
            pos += len(self.trigger)
        if self.call_head is None:
            pos = self._array(text, pos, calls)
        else:
            pos = self._run(text, pos, calls)
        return self._literal(text, _skip_space(text, pos), self.section_end, pos)

    def _literal(self, text: str, pos: int, literal: str, fallback: int) -> int:
        """Past ``literal`` at ``pos``; a missing closer at the very end is forgiven."""
        if not literal:
            return fallback
        if text.startswith(literal, pos):
            return pos + len(literal)
        if literal.startswith(text[pos:]):  # the closer is still arriving, or never came
            if pos == len(text):
                return pos
            raise _Incomplete(None)
        raise MalformedToolCall(f"expected {literal!r}")

    def _array(self, text: str, pos: int, calls: list[ToolCall]) -> int:
        pos = _skip_space(text, pos)
        if pos == len(text):
            raise _Incomplete(None)
        if text[pos] != "[":
            raise MalformedToolCall("tool calls must be a JSON array")
        pos += 1
        while True:
            pos = _skip_space(text, pos)
            if pos == len(text):
                raise _Incomplete(None)
            if text[pos] == "]" and not calls:
                return pos + 1
            call, pos = self._named(text, pos)
            calls.append(call)
            pos = _skip_space(text, pos)
            if pos == len(text):
                raise _Incomplete(None)
            if text[pos] == "]":
                return pos + 1
            if text[pos] != ",":
                raise MalformedToolCall("tool calls must be separated by commas")
            pos += 1

    def _run(self, text: str, pos: int, calls: list[ToolCall]) -> int:
        head = re.compile(self.call_head or "")
        while True:
            at = _skip_space(text, pos)
            match = head.match(text, at)
            if match is None:
                rest = text[at:]
                if not calls:
                    if not rest or may_open(head, rest):
                        raise _Incomplete(None)
                    raise MalformedToolCall("a tool call does not open as its format says")
                if rest and may_open(head, rest) and not self._closes(rest):
                    raise _Incomplete(None)
                return pos
            body = match.end()
            name = match.groupdict().get("name")
            try:
                if name is None:
                    call, end = self._named(text, body)
                else:
                    call, end = self._arguments(text, body, name.strip())
            except _Incomplete as cut:
                if cut.call is not None:
                    cut.call.id = match.groupdict().get("id") or ""
                raise
            call.id = call.id or match.groupdict().get("id") or ""
            calls.append(call)
            pos = self._literal(text, _skip_space(text, end), self.call_tail, end)

    def _closes(self, rest: str) -> bool:
        return bool(self.section_end) and self.section_end.startswith(rest[: len(self.section_end)])

    def _arguments(self, text: str, pos: int, name: str) -> tuple[ToolCall, int]:
        start = _skip_space(text, pos)
        found = json_value(text, start)
        if found is None:
            if self.call_tail and self.call_tail in text[start:]:
                raise MalformedToolCall("the call closes before its arguments do")
            raise _Incomplete(ToolCall(name, text[start:].rstrip()))
        if not isinstance(found.value, dict):
            raise MalformedToolCall("tool-call arguments must be a JSON object")
        return ToolCall(name, text[start : found.end]), found.end

    def _keyed(self, text: str, pos: int) -> tuple[ToolCall, int]:
        """A ``{"f": {…}}`` object at ``pos``."""
        head = _KEYED_HEAD.match(text, pos)
        if head is None:
            if json_value(text, pos) is None and "{".startswith(text[pos : pos + 1]):
                raise _Incomplete(None)
            raise MalformedToolCall('a tool call must be {"name": {arguments}}')
        call, end = self._arguments(text, head.end(), json.loads(f'"{head["name"]}"'))
        end = _skip_space(text, end)
        if end == len(text):
            raise _Incomplete(call)
        if text[end] != "}":
            raise MalformedToolCall("a tool call object has more than its name")
        return call, end + 1

    def _named(self, text: str, pos: int) -> tuple[ToolCall, int]:
        """A ``{"name": …, "arguments": {…}}`` object at ``pos``."""
        pos = _skip_space(text, pos)
        if self.name_is_key:
            return self._keyed(text, pos)
        found = json_value(text, pos)
        head = named_call_head(self.name_keys, self.args_keys).match(text, pos)
        if found is None:
            if head is None:
                raise _Incomplete(None)
            call, _ = self._arguments(text, head.end(), json.loads(f'"{head["name"]}"'))
            raise _Incomplete(call)  # the arguments are complete, the call object is not
        value = found.value
        if not isinstance(value, dict):
            raise MalformedToolCall("a tool call must be a JSON object")
        name = next((value[k] for k in self.name_keys if isinstance(value.get(k), str)), None)
        args_key = next((k for k in self.args_keys if k in value), None)
        if name is None:
            raise MalformedToolCall("a tool call has no function name")
        arguments = value.get(args_key, {}) if args_key else {}
        if isinstance(arguments, str):  # some models write the arguments as a JSON string
            arguments = arguments_object(arguments)
        if not isinstance(arguments, dict):
            raise MalformedToolCall("tool-call arguments must be a JSON object")
        if head is not None and isinstance(value.get(args_key or ""), dict):
            raw = self._arguments(text, head.end(), name)[0].arguments
        else:
            raw = json.dumps(arguments, ensure_ascii=False)
        model_id = value.get(self.id_key) if self.id_key else None
        return ToolCall(name, raw, model_id if isinstance(model_id, str) else ""), found.end
