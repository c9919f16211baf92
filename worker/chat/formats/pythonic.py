"""LFM2 and LFM2.5's Python-style tool calls (llama.cpp's ``common/parsers/lfm2.cpp``)::

    <|tool_call_start|>[get_time(city="Paris"), Calendar.add(title="demo")]<|tool_call_end|>

The list is read with Python's own parser (:mod:`ast`, nothing is evaluated): keyword
arguments become the JSON object, with Python's and JSON's literals (``True``/``true``,
``None``/``null``) both accepted. A stream gets the calls once their list closes.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from typing import Any

from worker.chat.formats.message import ParsedMessage, ToolCall
from worker.chat.formats.scanning import MalformedToolCall, held_back

__all__ = ["LFM2", "PythonicSyntax"]

_JSON_NAMES = {"true": True, "false": False, "null": None}


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
class PythonicSyntax:
    trigger: str = "<|tool_call_start|>"
    end: str = "<|tool_call_end|>"

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
