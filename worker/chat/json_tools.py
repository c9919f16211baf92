"""OpenAI ``tools`` / ``tool_choice`` for any model, by constrained JSON (docs/protocol.md §6).

Corral's generic tool mode: the tools are described in a system message, and a grammar built
from their JSON Schemas makes the model answer ``{"tool_call": {"name", "arguments"}}`` or, when
``tool_choice`` is ``auto``, ``{"response": "…"}``. The answer always parses, so it always maps
onto OpenAI's ``tool_calls``, whatever the model's own tool-call syntax would have been. Earlier
tool calls and tool results in the history are written back in the same JSON for the model.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from worker.sampling.grammars import GrammarError, grammar_for
from worker.sampling.json_schema import SchemaError
from worker.sampling.schema_limits import check_schema_size

__all__ = ["ToolAnswer", "ToolPlan", "chosen_tools", "plan_tools"]

_INSTRUCTIONS = (
    "You can call these tools. Answer with JSON only: either "
    '{"tool_call": {"name": <tool name>, "arguments": <arguments object>}} to call a tool'
)
_OR_RESPOND = ', or {"response": <your reply to the user>} to answer directly'


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    content: str | None
    tool_calls: list[dict[str, Any]]

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"


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

    def parse(self, text: str) -> ToolAnswer:
        """The model's constrained answer as content or tool calls."""
        try:
            answer = json.loads(text)
        except ValueError:  # cut short by max_tokens: give the client what there is
            return ToolAnswer(text, [])
        if "tool_call" in answer:
            call = answer["tool_call"]
            return ToolAnswer(
                None,
                [
                    {
                        "id": f"call_{uuid.uuid4().hex[:24]}",
                        "type": "function",
                        "function": {
                            "name": call["name"],
                            "arguments": json.dumps(call.get("arguments", {})),
                        },
                    }
                ],
            )
        return ToolAnswer(str(answer.get("response", "")), [])


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
                        "arguments": function.get("parameters") or {"type": "object"},
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
            {"name": n, "description": f.get("description", ""), "parameters": f.get("parameters")}
            for n, f in functions.items()
        ]
    )
    text = _INSTRUCTIONS + ("" if required else _OR_RESPOND) + ".\nTools: " + described
    return ToolPlan(grammar, text)
