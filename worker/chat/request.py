"""The chat request: every chat-shaped API is translated into it before the chat pipeline runs."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from worker.answer.sampling_fields import SamplingFields, TokenBudget

__all__ = ["ChatMessage", "ChatRequest"]


class ChatMessage(msgspec.Struct, omit_defaults=True):
    role: str
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None


class ChatRequest(SamplingFields, kw_only=True):
    messages: Annotated[list[ChatMessage], Meta(min_length=1)]
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    parallel_tool_calls: bool = True
    reasoning_format: str | None = None  # None: the worker's --reasoning-format
    # -1: the worker's --reasoning-budget; llama-server reads either name.
    reasoning_budget_tokens: Annotated[int, Meta(ge=-1)] = -1
    thinking_budget_tokens: Annotated[int, Meta(ge=-1)] = -1
    reasoning_budget_message: str | None = None  # None: the worker's --reasoning-budget-message
    max_tokens: TokenBudget | None = None
    max_completion_tokens: TokenBudget | None = None
    n_predict: TokenBudget | None = None
    # Whether the answer continues the last message (worker.chat.continuation).
    add_generation_prompt: bool = True
    continue_final_message: bool | str | None = None
    # OpenAI's token probabilities: reported through llama-server's n_probs (at least one).
    logprobs: bool = False
    top_logprobs: Annotated[int, Meta(ge=0, le=20)] | None = None

    def __post_init__(self) -> None:
        if self.logprobs and not self.n_probs:
            self.n_probs = max(self.top_logprobs or 0, 1)
