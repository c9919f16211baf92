"""Continuing the conversation's last message instead of answering it (docs/api.md).

As llama-server (``oaicompat_chat_params_parse`` in server-common.cpp, ``prefill_assistant`` on
by default): a conversation that ends with an assistant message is continued from that
message's text, and ``continue_final_message`` (vLLM's and transformers' name) asks for the
same explicitly, with ``add_generation_prompt: false``. The messages before it are rendered
with the generation prompt, as llama.cpp renders them, and the last message's text follows
(its thinking first, inside the template's thinking tags, when the template has them).
"""

from __future__ import annotations

from typing import Any, Literal

from corral.http.errors import ApiError
from worker.chat.formats.reasoning import ThinkingTags
from worker.chat.request import ChatRequest

__all__ = ["Continuation", "continuation", "continued_tail"]

Continuation = Literal["content", "reasoning"]


def _asked(value: bool | str | None) -> bool:
    return value is True or value in ("content", "reasoning_content")


def continuation(body: ChatRequest, *, prefill_assistant: bool = True) -> Continuation | None:
    """Whether the answer continues the last message, and in what; 400 where llama-server
    refuses the request. ``prefill_assistant`` (llama-server's ``--[no-]prefill-assistant``):
    a last assistant message is continued even when the request does not ask."""
    if not body.messages:  # Anthropic's empty conversation (llama-server accepts it)
        return None
    explicit = _asked(body.continue_final_message)
    add_generation_prompt = body.add_generation_prompt
    last = body.messages[-1]
    if not explicit and prefill_assistant and last.role == "assistant":
        if len(body.messages) >= 2 and body.messages[-2].role == "assistant":
            raise ApiError(400, "Cannot have 2 or more assistant messages at the end of the list.")
        explicit, add_generation_prompt = True, False
    if not explicit:
        return None
    if add_generation_prompt:
        raise ApiError(
            400, "Cannot set both add_generation_prompt and continue_final_message to true."
        )
    if last.role == "assistant" and last.tool_calls:
        raise ApiError(400, "Cannot continue an assistant message that contains tool calls.")
    if body.continue_final_message == "reasoning_content":
        return "reasoning"
    if body.continue_final_message == "content":
        return "content"
    # Automatic: the thinking when the message has only that.
    return "reasoning" if last.reasoning_content and not last.content else "content"


def _text(content: Any) -> str:
    """A message's text; parts are joined as llama.cpp's ``render_content`` joins them."""
    if isinstance(content, list):
        return "\n\n".join(
            part.get("text", "") for part in content if isinstance(part, dict) and "text" in part
        )
    return content if isinstance(content, str) else ""


def continued_tail(
    generation_prompt: str,
    message: dict[str, Any],
    mode: Continuation,
    thinking: ThinkingTags | None,
) -> tuple[str, str]:
    """What follows the earlier messages: the generation prompt and the message's text so far;
    and the part of it the output is read after (up to the thinking it continues, if any)."""
    tail, read_after = generation_prompt, generation_prompt
    if thinking is not None:
        cut = tail.find(thinking.start)
        tail = (tail if cut < 0 else tail[:cut]) + thinking.start
        read_after = tail
        tail += message.get("reasoning_content") or ""
        if mode == "content":
            tail += thinking.end
            read_after = tail
    if mode == "content":
        tail += _text(message.get("content"))
        read_after = tail
    return tail, read_after
