"""Anthropic's Messages request, translated into the chat pipeline's :class:`ChatRequest`.

Tool traffic becomes OpenAI's form (``tool_calls`` on assistant turns, ``tool`` messages for
results) so the chat pipeline's tool mode (:mod:`worker.chat.json_tools`) runs Anthropic's tools
too;
``thinking`` blocks of earlier answers become the turn's ``reasoning_content``, which templates
that show past thinking render, as llama-server's conversion does.
"""

from __future__ import annotations

import json
from typing import Any

from corral.http.errors import ApiError
from worker.answer.sampling_fields import SamplingFields
from worker.api.anthropic.protocol import (
    AnyChoice,
    AutoChoice,
    ImageBlock,
    MessagesRequest,
    NoneChoice,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from worker.chat.request import ChatMessage, ChatRequest

__all__ = ["to_chat_request"]


def _text(blocks: str | list[TextBlock]) -> str:
    return blocks if isinstance(blocks, str) else "".join(block.text for block in blocks)


def _tool_call(block: ToolUseBlock) -> dict[str, Any]:
    function = {"name": block.name, "arguments": json.dumps(block.input)}
    return {"id": block.id, "type": "function", "function": function}


def _tool_message(block: ToolResultBlock) -> ChatMessage:
    # The model only sees text: an error flag it cannot see would make a failure read as data.
    error = "Error: " if block.is_error else ""
    content = block.content
    if isinstance(content, str):
        return ChatMessage("tool", error + content, tool_call_id=block.tool_use_id)
    if not any(isinstance(b, ImageBlock) for b in content):
        text = "".join(b.text for b in content if isinstance(b, TextBlock))
        return ChatMessage("tool", error + text, tool_call_id=block.tool_use_id)
    # With images, OpenAI's multimodal parts, each where it stood (as llama-server converts).
    parts = [{"type": "text", "text": error}] if error else []
    parts += [
        _image_part(b) if isinstance(b, ImageBlock) else {"type": "text", "text": b.text}
        for b in content
    ]
    return ChatMessage("tool", parts, tool_call_id=block.tool_use_id)


def _image_part(block: ImageBlock) -> dict[str, Any]:
    """An image block as the OpenAI part the chat pipeline reads (docs/api.md)."""
    source = block.source
    url = source.url if source.type == "url" else f"data:{source.media_type};base64,{source.data}"
    return {"type": "image_url", "image_url": {"url": url}}


def _user_content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    # Plain text stays a string; with images, the parts keep each image where it stood.
    if any(part["type"] != "text" for part in parts):
        return parts
    return "".join(part["text"] for part in parts)


def _chat_messages(body: MessagesRequest) -> list[ChatMessage]:
    chat: list[ChatMessage] = []
    if body.system:
        chat.append(ChatMessage("system", _text(body.system)))
    for i, message in enumerate(body.messages):
        if isinstance(message.content, str):
            chat.append(ChatMessage(message.role, message.content))
            continue
        text: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        thinking: list[str] = []
        for j, block in enumerate(message.content):
            where = f"messages[{i}].content[{j}]"
            if isinstance(block, TextBlock):
                text.append({"type": "text", "text": block.text})
            elif isinstance(block, ThinkingBlock | RedactedThinkingBlock):
                if message.role != "assistant":
                    raise ApiError(400, f"{where}: thinking blocks belong in assistant messages")
                # Redacted thinking is encrypted by Anthropic's API: no model here can read it.
                if isinstance(block, ThinkingBlock):
                    thinking.append(block.thinking)
            elif isinstance(block, ImageBlock):
                if message.role != "user":
                    raise ApiError(400, f"{where}: image blocks belong in user messages")
                text.append(_image_part(block))
            elif isinstance(block, ToolUseBlock):
                if message.role != "assistant":
                    raise ApiError(400, f"{where}: tool_use blocks belong in assistant messages")
                calls.append(_tool_call(block))
            else:
                if message.role != "user":
                    raise ApiError(400, f"{where}: tool_result blocks belong in user messages")
                # Text before a result stays before it: results answer the previous turn.
                if text:
                    chat.append(ChatMessage("user", _user_content(text)))
                    text = []
                chat.append(_tool_message(block))
        if message.role == "assistant":
            reply = "".join(part["text"] for part in text) or None
            reasoning = "".join(thinking) or None
            chat.append(
                ChatMessage(
                    "assistant", reply, tool_calls=calls or None, reasoning_content=reasoning
                )
            )
        elif text or not message.content:
            chat.append(ChatMessage("user", _user_content(text)))
    return chat


def _tools(body: MessagesRequest) -> tuple[list[dict[str, Any]] | None, Any]:
    """Anthropic's tools and tool_choice in the OpenAI form :func:`plan_tools` reads."""
    if not body.tools:
        return None, None
    tools = [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
            },
        }
        for t in body.tools
    ]
    choice = body.tool_choice
    if choice is None or isinstance(choice, AutoChoice):
        return tools, "auto"
    if isinstance(choice, AnyChoice):
        return tools, "required"
    if isinstance(choice, NoneChoice):
        return tools, "none"
    return tools, {"type": "function", "function": {"name": choice.name}}


def to_chat_request(body: MessagesRequest) -> ChatRequest:
    """The Messages request as the chat request the chat pipeline answers."""
    sampling = {name: getattr(body, name) for name in SamplingFields.__struct_fields__}
    stops = [body.stop] if isinstance(body.stop, str) else list(body.stop or [])
    sampling["stop"] = [*(body.stop_sequences or []), *stops]
    tools, tool_choice = _tools(body)
    single = getattr(body.tool_choice, "disable_parallel_tool_use", False)
    # Extended thinking's budget is llama-server's thinking budget; "disabled" (or no
    # ``thinking``) leaves the model's and the worker's defaults alone, as llama-server does.
    if body.thinking is not None and body.thinking.type == "enabled":
        sampling["thinking_budget_tokens"] = body.thinking.budget_tokens
    return ChatRequest(
        **sampling,
        messages=_chat_messages(body),
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=not single,
        max_tokens=body.max_tokens,
    )
