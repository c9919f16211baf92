"""Template families whose messages or source llama.cpp adjusts before rendering.

Each family is recognised by text in its template, exactly as ``common_chat_try_specialized_
template`` and ``common_chat_templates_init`` recognise it (``common/chat.cpp``,
``common/parsers/*.cpp``).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["finish_prompt", "patch_source", "rewrite_messages"]

# gpt-oss and Mistral templates raise on inputs llama.cpp produces itself; it patches them.
_SOURCE_PATCHES = (
    (
        "<|channel|>",
        "in message.content or",
        '{%- if "<|channel|>analysis<|message|>" in message.content or '
        '"<|channel|>final<|message|>" in message.content %}',
    ),
    (
        "[TOOL_CALLS]",
        "if (message['content'] is none or",
        "{%- if (message['content'] is none or message['content'] == '' or "
        "message['content']|length == 0) and (message['tool_calls'] is not defined or "
        "message['tool_calls'] is none or message['tool_calls']|length == 0) %}",
    ),
)


def patch_source(source: str) -> str:
    for family, probe, statement in _SOURCE_PATCHES:
        if family in source and probe in source:
            source = source.replace(statement, "{%- if false %}")
    return source


def _is_ministral_3(source: str) -> bool:
    return all(t in source for t in ("[SYSTEM_PROMPT]", "[TOOL_CALLS]", "[ARGS]")) and (
        "[CALL_ID]" not in source
    )


def _is_old_gemma_4(source: str) -> bool:
    return "'<|tool_call>call:'" in source and "{#- OpenAI Chat Completions:" not in source


def _is_lfm2(source: str) -> bool:
    """LFM2 (tool list markers) and LFM2.5 (a plain "List of tools: [")."""
    if "<|tool_list_start|>" in source:
        return "<|tool_list_end|>" in source
    return "List of tools: [" in source


def _ministral_3(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """System and assistant turns as content blocks, reasoning as a ``thinking`` block."""
    adjusted = []
    for message in messages:
        if message["role"] not in ("system", "assistant"):
            adjusted.append(message)
            continue
        blocks: list[dict[str, Any]] = []
        if isinstance(message.get("reasoning_content"), str):
            blocks.append({"type": "thinking", "thinking": message["reasoning_content"]})
        content = message.get("content")
        if isinstance(content, str):
            blocks.append({"type": "text", "text": content})
        elif isinstance(content, list):
            blocks += content
        rest = {k: v for k, v in message.items() if k != "reasoning_content"}
        adjusted.append({**rest, "content": blocks})
    return adjusted


def _gemma_4_tool_turns(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """assistant(tool calls) → tool results → assistant(text) as one model turn carrying
    ``tool_responses`` (``workaround::convert_tool_responses_gemma4``)."""
    result: list[dict[str, Any]] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            result.append(message)
            i += 1
            continue
        calls = list(message["tool_calls"])
        reasoning = message.get("reasoning_content")
        responses: list[dict[str, Any]] = []
        i += 1
        while i < len(messages) and messages[i].get("role") == "tool":
            responses.append(_gemma_4_response(messages[i], calls, len(responses)))
            i += 1
        content: Any = None
        if i < len(messages) and messages[i].get("role") == "assistant":
            following = messages[i]
            if not following.get("tool_calls") and following.get("content"):
                content = following["content"]
                i += 1
        turn: dict[str, Any] = {"role": "assistant", "tool_calls": calls}
        if responses:
            turn["tool_responses"] = responses
        if content is not None:
            turn["content"] = content
        if isinstance(reasoning, str):
            turn["reasoning_content"] = reasoning
        result.append(turn)
    return result


def _gemma_4_response(
    message: dict[str, Any], calls: list[dict[str, Any]], index: int
) -> dict[str, Any]:
    content = message.get("content")
    response: Any = content
    if isinstance(content, str):
        try:
            response = json.loads(content)
        except ValueError:
            response = content
    name = ""
    if index < len(calls):
        name = calls[index].get("function", {}).get("name", "")
    return {"name": name or message.get("tool_call_id", ""), "response": response}


def _thinking_copy(messages: list[dict[str, Any]], gpt_oss: bool) -> list[dict[str, Any]]:
    """gpt-oss and LFM2 read reasoning from ``thinking``; gpt-oss drops the content of a
    tool-calling turn that has reasoning."""
    adjusted = []
    for message in messages:
        if isinstance(message.get("reasoning_content"), str):
            message = {**message, "thinking": message["reasoning_content"]}
            if gpt_oss and message.get("tool_calls"):
                message.pop("content", None)
        adjusted.append(message)
    return adjusted


def rewrite_messages(messages: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    """The family's own message rewrite, if its template is one llama.cpp adjusts for."""
    if _is_ministral_3(source):
        return _ministral_3(messages)
    if "<|channel|>" in source:
        return _thinking_copy(messages, gpt_oss=True)
    if _is_lfm2(source):
        return _thinking_copy(messages, gpt_oss=False)
    if _is_old_gemma_4(source):
        return _gemma_4_tool_turns(messages)
    return messages


def finish_prompt(prompt: str, source: str, add_generation_prompt: bool) -> str:
    """Gemma 4 after a tool turn ends with no model turn open; llama.cpp opens one."""
    if "'<|tool_call>call:'" in source and add_generation_prompt and prompt.endswith("<turn|>\n"):
        return prompt + "<|turn>model\n"
    return prompt
