"""LFM2 and LFM2.5's Python-style tool calls (llama.cpp's ``common/parsers/lfm2.cpp``)::

    <|tool_call_start|>[get_time(city="Paris"), Calendar.add(title="demo")]<|tool_call_end|>

The list is read with Python's own parser (:mod:`ast`, nothing is evaluated): keyword
arguments become the JSON object, with Python's and JSON's literals (``True``/``true``,
``None``/``null``) both accepted. A stream gets the calls once their list closes. The grammar,
triggered by the list's opening marker, allows only the tool's parameters as keywords: a
``string`` parameter takes a quoted string, others any Python or JSON literal.
"""

from __future__ import annotations

import ast
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

__all__ = ["LFM2", "PythonicSyntax"]

_JSON_NAMES = {"true": True, "false": False, "null": None}
_GRAMMAR_VALUES = (
    'py-string ::= "\\"" ([^"\\\\] | "\\\\" [^\\n])* "\\""'
    ' | "\'" ([^\'\\\\] | "\\\\" [^\\n])* "\'"',
    'py-number ::= "-"? [0-9]+ ("." [0-9]+)? ([eE] [-+]? [0-9]+)?',
    'py-dict ::= "{" gap ("}" | py-kv ("," gap py-kv)* gap "}")',
    'py-kv ::= py-string gap ":" gap py-value',
    'py-list ::= "[" gap ("]" | py-value ("," gap py-value)* gap "]")',
    "py-value ::= py-dict | py-list | py-string | py-number"
    ' | "True" | "False" | "None" | "true" | "false" | "null"',
)


def _value(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    if isinstance(node, ast.List | ast.Tuple):
        return [_value(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        return {_value(k): _value(v) for k, v in zip(node.keys, node.values, strict=True)
                if k is not None}  # fmt: skip
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _value(node.operand)
        if isinstance(value, int | float):
            return -value
    raise MalformedToolCall("a tool-call argument is not a literal")


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    raise MalformedToolCall("a tool call without a function name")


def _calls(source: str) -> list[ToolCall]:
    try:
        tree = ast.parse(source.strip(), mode="eval").body
    except SyntaxError:
        raise MalformedToolCall("tool calls are not a Python list") from None
    if not isinstance(tree, ast.List):
        raise MalformedToolCall("tool calls are not a Python list")
    calls: list[ToolCall] = []
    for item in tree.elts:
        if not isinstance(item, ast.Call) or item.args:
            raise MalformedToolCall("a tool call takes keyword arguments only")
        arguments = {kw.arg: _value(kw.value) for kw in item.keywords if kw.arg is not None}
        calls.append(ToolCall(_name(item.func), json.dumps(arguments, ensure_ascii=False)))
    return calls


@dataclass(frozen=True, slots=True)
class PythonicSyntax(NativeSyntax):
    trigger: str = "<|tool_call_start|>"
    end: str = "<|tool_call_end|>"

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
            properties = parameters.get("properties") or {}
            args = " | ".join(
                f"{literal(key + '=')} "
                + ("py-string" if isinstance(s, dict) and s.get("type") == "string" else "py-value")
                for key, s in properties.items()
            )
            body = f'( {args} ) ("," gap ( {args} ))*' if args else ""
            calls.append(f'{literal(name + "(")} gap {body} gap ")"')
        repeat = ' ("," gap tool-call)*' if parallel else ""
        section = f'{literal(self.trigger)} "[" gap tool-call{repeat} gap "]" {literal(self.end)}'
        rules = [GAP_RULE, *_GRAMMAR_VALUES, f"tool-call ::= {choice(calls)}"]
        if lazy:
            return ToolGrammar(
                "\n".join([*rules, f"root ::= {section}"]), (regex_escape(self.trigger),)
            )
        before = text_without(self.trigger)  # thinking and text may come first, as in llama.cpp
        return ToolGrammar("\n".join([*rules, f"root ::= {before} {section}"]), ())

    def parse(self, text: str, partial: bool) -> ParsedMessage:
        message = ParsedMessage()
        pos = 0
        while (start := text.find(self.trigger, pos)) >= 0:
            message.content += text[pos:start]
            close = text.find(self.end, start)
            if close < 0:
                if not partial:
                    raise MalformedToolCall("the output ends inside the tool calls")
                return message
            message.tool_calls += _calls(text[start + len(self.trigger) : close])
            pos = close + len(self.end)
        rest = text[pos:]
        message.content += rest[: held_back(rest, (self.trigger,))] if partial else rest
        return message


LFM2 = PythonicSyntax()
