"""OpenAI ``tools`` / ``tool_choice`` for any model, by constrained JSON (docs/protocol.md §6).

Corral's generic tool mode: the tools are described in a system message, and a grammar built
from their JSON Schemas makes the model answer ``{"tool_call": {"name", "arguments"}}`` or, when
``tool_choice`` is ``auto``, ``{"response": "…"}``. The answer always parses, so it always maps
onto OpenAI's ``tool_calls``, whatever the model's own tool-call syntax would have been. Earlier
tool calls and tool results in the history are written back in the same JSON for the model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from worker.chat.formats import ParsedMessage, ToolCall
from worker.chat.formats.gbnf import parameters
from worker.chat.formats.scanning import json_value, named_call_head
from worker.sampling.grammars import GrammarError, grammar_for
from worker.sampling.json_schema import SchemaError
from worker.sampling.schema_limits import check_schema_size

__all__ = ["ToolPlan", "chosen_tools", "plan_tools"]

_INSTRUCTIONS = (
    "You can call these tools. Answer with JSON only: either "
    '{"tool_call": {"name": <tool name>, "arguments": <arguments object>}} to call a tool'
)
_OR_RESPOND = ', or {"response": <your reply to the user>} to answer directly'
# How the grammar's two answers open (its "space" rule allows whitespace between tokens).
_RESPONSE = re.compile(r'\s*\{\s*"response"\s*:\s*"')
_CALL = re.compile(
    r'\s*\{\s*"tool_call"\s*:\s*' + named_call_head(("name",), ("arguments",)).pattern
)
# The end of a JSON string's text so far: the unescaped closing quote, if it came.
_STRING_END = re.compile(r'"|\\(?:u[0-9a-fA-F]{0,4}|.)?')


@dataclass(frozen=True, slots=True)
class ToolPlan:
    grammar: str
    system_text: str

    def prepare(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The conversation as the model sees it: instructions first, tool traffic as JSON."""
        prepared: list[dict[str, Any]] = []
        for message in messages:
            if message.get("role") == "assistant" and message.get("tool_calls"):
                calls = [
                    {"tool_call": {"name": c["function"]["name"],
                                   "arguments": _arguments(c["function"].get("arguments"))}}
                    for c in message["tool_calls"]
                ]  # fmt: skip
                text = "\n".join(json.dumps(call) for call in calls)
                prepared.append({"role": "assistant", "content": text})
            elif message.get("role") == "tool":
                result = {"tool_result": {"id": message.get("tool_call_id"),
                                          "content": message.get("content")}}  # fmt: skip
                prepared.append({"role": "user", "content": json.dumps(result)})
            else:
                prepared.append(message)
        if prepared and prepared[0].get("role") == "system":
            first = prepared[0]
            merged = f"{first.get('content') or ''}\n\n{self.system_text}".strip()
            return [{**first, "content": merged}, *prepared[1:]]
        return [{"role": "system", "content": self.system_text}, *prepared]

    def parse(self, text: str, partial: bool) -> ParsedMessage:
        """The model's constrained answer as content or a tool call, as it streams.

        As llama-server's generic format: the ``response`` string streams as content, a call
        once its name is written, then its arguments as compact JSON (the model's text without
        the spacing the grammar allows, so the streamed pieces add up to the whole). An answer
        cut short (``max_tokens``, a stop word) is read as a stream's prefix too, as
        llama-server reads any answer that did not end at EOS: the text so far, or the call
        with the arguments so far (``finish_reason: length``).
        """
        response = _RESPONSE.match(text)
        if response is not None:
            return ParsedMessage(content=_string_prefix(text, response.end()))
        head = _CALL.match(text)
        if head is not None:
            start = _skip_space(text, head.end())
            found = json_value(text, start)
            arguments = _compact(text[start : found.end] if found is not None else text[start:])
            return ParsedMessage(tool_calls=[ToolCall(json.loads(f'"{head["name"]}"'), arguments)])
        if partial or json_value(text, 0) is None:
            return ParsedMessage()  # not far enough to tell which answer it is
        return ParsedMessage(content=text)  # JSON of another shape: not the grammar's


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _compact(json_text: str) -> str:
    """JSON text (whole or a prefix) without whitespace outside its strings, as llama.cpp
    dumps a generic call's arguments; a prefix's is a prefix of the whole's."""
    kept: list[str] = []
    in_string = escaped = False
    for char in json_text:
        if in_string:
            in_string = escaped or char != '"'
            escaped = not escaped and char == "\\"
        elif char.isspace():
            continue
        else:
            in_string = char == '"'
        kept.append(char)
    return "".join(kept)


def _string_prefix(text: str, pos: int) -> str:
    """The JSON string opened just before ``pos``, decoded as far as it is written: up to its
    closing quote, else without an escape still arriving or half a surrogate pair."""
    written, scan = len(text), pos
    while (found := _STRING_END.search(text, scan)) is not None:
        escape = found.group()
        if escape == '"':
            written = found.start()
            break
        if found.end() == len(text) and (escape == "\\" or escape.startswith("\\u")):
            written = found.start() if len(escape) < 6 else written  # still arriving
            break
        scan = found.end()
    decoded = str(json.loads(f'"{text[pos:written]}"'))
    return decoded[:-1] if decoded and "\ud800" <= decoded[-1] <= "\udbff" else decoded


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def chosen_tools(
    tools: list[dict[str, Any]], tool_choice: Any
) -> tuple[dict[str, dict[str, Any]], bool]:
    """The functions the model may call, by name, and whether it must call one."""
    functions: dict[str, dict[str, Any]] = {}
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise GrammarError(f"tools[{index}] must be {{'type': 'function', 'function': …}}")
        functions[function["name"]] = function
    try:  # before either converter (Corral's, or a native syntax's) sees them
        check_schema_size([function.get("parameters") for function in functions.values()])
    except SchemaError as exc:
        raise GrammarError(f"tools: {exc}") from None
    if isinstance(tool_choice, dict):
        name = (tool_choice.get("function") or {}).get("name")
        if name not in functions:
            raise GrammarError(f"tool_choice names unknown tool {name!r}")
        return {name: functions[name]}, True
    if tool_choice not in (None, "auto", "required"):
        raise GrammarError("tool_choice must be none, auto, required or a function")
    return functions, tool_choice == "required"


def plan_tools(tools: list[dict[str, Any]] | None, tool_choice: Any) -> ToolPlan | None:
    """How to run a request with tools; None when it has none or ``tool_choice`` is none."""
    if not tools or tool_choice == "none":
        return None
    functions, required = chosen_tools(tools, tool_choice)
    calls = [
        {
            "type": "object",
            "properties": {
                "tool_call": {
                    "type": "object",
                    "properties": {
                        "name": {"const": name},
                        "arguments": parameters(function),
                    },
                    "required": ["name", "arguments"],
                }
            },
            "required": ["tool_call"],
        }
        for name, function in functions.items()
    ]
    if not required:
        calls.append(
            {
                "type": "object",
                "properties": {"response": {"type": "string"}},
                "required": ["response"],
            }
        )
    grammar = grammar_for(None, {"anyOf": calls}, None)
    assert grammar is not None
    described = json.dumps(
        [
            {"name": n, "description": f.get("description", ""), "parameters": parameters(f)}
            for n, f in functions.items()
        ]
    )
    text = _INSTRUCTIONS + ("" if required else _OR_RESPOND) + ".\nTools: " + described
    return ToolPlan(grammar, text)
