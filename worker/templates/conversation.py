"""The messages and tools a template sees, built and rewritten as llama.cpp does.

``common/chat.cpp`` first turns the request's messages into its own shape (content always
present, ``""`` when empty; tool-call arguments as a JSON string; only non-empty names and
ids), then applies its workarounds for the template at hand: ``developer`` becomes
``system``, a system message the template cannot take is folded into the first user turn,
string arguments become objects for templates that read them as objects, and a few
template families get their own rewrites (Gemma 4, Ministral 3, gpt-oss, LFM2, StepFun).
"""

from __future__ import annotations

import json
from typing import Any

from worker.templates.capabilities import TemplateCaps

__all__ = ["ConversationError", "template_messages", "template_tools"]


class ConversationError(ValueError):
    """The conversation cannot be handed to the template (llama-server answers 400 too)."""


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _content(message: dict[str, Any]) -> str | list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, list):
        parts = [
            {"type": "text", "text": part.get("text", "")}
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        ]
        return parts if parts else ""
    return content if isinstance(content, str) else ""


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function")
    if call.get("type", "function") != "function" or not isinstance(function, dict):
        raise ConversationError(f"Unsupported tool call type: {_compact(call)}")
    if "name" not in function:
        raise ConversationError(f"Missing tool call name: {_compact(call)}")
    arguments = function.get("arguments")
    shaped: dict[str, Any] = {
        "type": "function",
        "function": {
            "name": function["name"],
            "arguments": arguments if isinstance(arguments, str) else _compact(arguments),
        },
    }
    if call.get("id"):
        shaped["id"] = call["id"]
    return shaped


def _message(message: dict[str, Any]) -> dict[str, Any]:
    """One message in llama.cpp's shape (``common_chat_msg::to_json_oaicompat``)."""
    shaped: dict[str, Any] = {"role": message.get("role", ""), "content": _content(message)}
    for key in ("reasoning_content", "name", "tool_call_id"):
        if message.get(key):
            shaped[key] = message[key]
    if message.get("tool_calls"):
        shaped["tool_calls"] = [_tool_call(call) for call in message["tool_calls"]]
    return shaped


def _normalize_content(messages: list[dict[str, Any]], caps: TemplateCaps) -> None:
    """Plain text for templates that only take text, parts for those that only take parts."""
    only_text = caps.supports_string_content and not caps.supports_typed_content
    only_parts = caps.supports_typed_content and not caps.supports_string_content
    for message in messages:
        content = message["content"]
        if only_parts and isinstance(content, str):
            message["content"] = [{"type": "text", "text": content}]
        elif only_text and isinstance(content, list):
            message["content"] = "\n".join(part["text"] for part in content)


def _fold_system(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not messages or messages[0]["role"] != "system":
        return messages
    if len(messages) == 1:
        return []
    first, second = messages[0], messages[1]
    if not isinstance(first["content"], str) or not isinstance(second["content"], str):
        raise ConversationError("a system message folded into the next turn must be text")
    return [{**second, "content": f"{first['content']}\n{second['content']}"}, *messages[2:]]


def _object_arguments(messages: list[dict[str, Any]]) -> None:
    for message in messages:
        for call in message.get("tool_calls", []):
            arguments = call["function"]["arguments"]
            if isinstance(arguments, str):
                try:
                    call["function"]["arguments"] = json.loads(arguments)
                except ValueError as exc:
                    raise ConversationError(
                        f"Failed to parse tool call arguments as JSON: {exc}"
                    ) from None


def template_messages(
    messages: list[dict[str, Any]], source: str, caps: TemplateCaps
) -> list[dict[str, Any]]:
    """``messages`` as the template receives them (``common_chat_templates_apply_jinja``)."""
    shaped = [_message(message) for message in messages]
    if "You have access to the following functions in JSONSchema format" in source:
        for message in shaped:  # StepFun: stray whitespace sends it into reasoning loops
            _trim(message)
    _normalize_content(shaped, caps)
    if "<|channel|>" not in source:  # gpt-oss keeps its developer role
        for message in shaped:
            if message["role"] == "developer":
                message["role"] = "system"
    if not caps.supports_system_role:
        shaped = _fold_system(shaped)
    if caps.supports_object_arguments:
        _object_arguments(shaped)
    return shaped


def _trim(message: dict[str, Any]) -> None:
    content = message["content"]
    if isinstance(content, str):
        message["content"] = content.strip(" \t\n\r")
    else:
        for part in content:
            part["text"] = part["text"].strip(" \t\n\r")
    if "reasoning_content" in message:
        message["reasoning_content"] = message["reasoning_content"].strip(" \t\n\r")
        if not message["reasoning_content"]:
            del message["reasoning_content"]


def template_tools(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """``tools`` as the template receives them; None when there are none (left undefined)."""
    if not tools:
        return None
    shaped = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if tool.get("type") != "function" or not isinstance(function, dict):
            raise ConversationError(f"Unsupported tool type: {_compact(tool)}")
        if "name" not in function:
            raise ConversationError(f"Missing tool function name: {_compact(tool)}")
        parameters = function.get("parameters")
        shaped.append(
            {
                "type": "function",
                "function": {
                    "name": function["name"],
                    "description": function.get("description", ""),
                    "parameters": {} if parameters is None else parameters,
                },
            }
        )
    return shaped
