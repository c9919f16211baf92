"""Llama 3.1 / 3.3's tool calls: custom tools as JSON, built-in tools after ``<|python_tag|>``
(docs/tool-calls.md), as llama.cpp's Llama 3.x parser with built-in tools reads them::

    {"name": "get_weather", "parameters": {"city": "Paris"}}
    <|python_tag|>brave_search.call(query="weather in Paris")
    <|python_tag|>print(2 + 2)          (code for the request's code tool)

A built-in call is one of the request's tools named as Meta's built-ins are
(:data:`BUILTIN_TOOLS`) with keyword arguments whose values are JSON. Text after the tag that is
not such a call is code for the request's ``python``/``code_interpreter`` tool, when it has one.
Built-in calls are only recognised whole, so a stream gets them when the answer ends. The
grammar adds the built-in calls, as llama.cpp's wrote them, to the custom tools' JSON calls.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from worker.chat.formats.gbnf import ToolGrammar, functions, literal, regex_escape
from worker.chat.formats.json_calls import JsonToolSyntax
from worker.chat.formats.message import ParsedMessage, ToolCall
from worker.chat.formats.reasoning import ThinkingTags
from worker.chat.formats.scanning import MalformedToolCall, held_back, json_value
from worker.chat.formats.syntax import NativeSyntax
from worker.sampling.schema_grammar import SchemaRules

__all__ = ["BUILTIN_TOOLS", "CODE_TOOLS", "PYTHON_TAG", "PythonTagSyntax"]

PYTHON_TAG = "<|python_tag|>"
# Meta's built-in tools and the one argument llama.cpp expects each to take.
BUILTIN_TOOLS = {
    "wolfram_alpha": "query",
    "web_search": "query",
    "brave_search": "query",
    "python": "code",
    "code_interpreter": "code",
}
CODE_TOOLS = ("code_interpreter", "python")  # which gets code written after the tag
_CALL_HEAD = re.compile(r"\s*(\w+)\s*\.\s*call\(")
_ARG_NAME = re.compile(r"\s*(\w+)\s*=\s*")


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _builtin_call(text: str, names: frozenset[str]) -> ToolCall | None:
    """``name.call(k=v, …)`` filling ``text`` (the answer after the tag), or None."""
    head = _CALL_HEAD.match(text)
    if head is None or head[1] not in names:
        return None
    arguments: dict[str, Any] = {}
    pos = head.end()
    while (arg := _ARG_NAME.match(text, pos)) is not None:
        found = json_value(text, arg.end())
        if found is None:
            raise MalformedToolCall("a built-in tool's argument is not JSON")
        arguments[arg[1]] = found.value
        pos = _skip_space(text, found.end)
        if not text.startswith(",", pos):
            break
        pos += 1
    pos = _skip_space(text, pos)
    if not text.startswith(")", pos) or text[pos + 1 :].strip():
        raise MalformedToolCall("a built-in tool call does not close")
    return ToolCall(head[1], json.dumps(arguments, ensure_ascii=False))


def _builtin_calls(
    builtin: frozenset[str], tools: list[dict[str, Any]], rules: SchemaRules
) -> list[str]:
    """``<|python_tag|>name.call(k=v, …)`` for the request's built-in tools, each argument a
    JSON value of its schema, as llama.cpp's grammar writes them."""
    calls: list[str] = []
    for index, (name, parameters) in enumerate(functions(tools)):
        if name not in builtin:
            continue
        properties = parameters.get("properties") or {BUILTIN_TOOLS[name]: {"type": "string"}}
        args = ' ", " '.join(
            f"{literal(key + '=')} {rules.add(value, f'builtin-{index}-{key}', parameters)}"
            for key, value in properties.items()
        )
        calls.append(f"{literal(PYTHON_TAG + name + '.call(')} {args} {literal(')')}")
    return calls


@dataclass(frozen=True, slots=True)
class PythonTagSyntax(NativeSyntax):
    custom: JsonToolSyntax  # how the custom tools are called
    builtin: frozenset[str] = frozenset()  # the request's tools that are Meta's built-ins

    def grammar(
        self,
        tools: list[dict[str, Any]],
        *,
        lazy: bool,
        parallel: bool,
        thinking: ThinkingTags | None = None,
    ) -> ToolGrammar:
        rules = SchemaRules()
        calls = self.custom.call_rules(tools, rules)
        builtin = _builtin_calls(self.builtin, tools, rules)
        section = self.custom.section(*((regex_escape(PYTHON_TAG),) if builtin else ()))
        return section.grammar(
            rules.gbnf(),
            [*calls, *builtin],
            lazy=lazy,
            parallel=parallel,
            thinking=thinking,
        )

    def with_tools(self, tools: list[dict[str, Any]]) -> PythonTagSyntax:
        names = {str((t.get("function") or {}).get("name")) for t in tools}
        return replace(self, builtin=frozenset(names & BUILTIN_TOOLS.keys()))

    def parse(self, text: str, partial: bool) -> ParsedMessage:
        start = text.find(PYTHON_TAG) if self.builtin else -1
        if start < 0:
            message = self.custom.parse(text, partial)
            if partial and self.builtin and not message.tool_calls:
                message.content = message.content[: held_back(message.content, (PYTHON_TAG,))]
            return message
        content = text[:start]
        if partial:  # a built-in call is only known once the answer is over
            return ParsedMessage(content=content)
        body = text[start + len(PYTHON_TAG) :]
        call = _builtin_call(body, self.builtin)
        if call is None:
            code_tool = next((name for name in CODE_TOOLS if name in self.builtin), None)
            if code_tool is None or not body.strip():
                raise MalformedToolCall("the python tag opens no built-in tool call")
            call = ToolCall(code_tool, json.dumps({"code": body.strip()}, ensure_ascii=False))
        return ParsedMessage(content=content, tool_calls=[call])
