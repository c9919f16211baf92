"""Request bodies the worker accepts, with llama-server's field names (SPEC §6).

Unknown fields are ignored, as upstream does; known ones are type- and range-checked so a bad
value is a 400 that names the field.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

__all__ = [
    "ChatMessage",
    "ChatRequest",
    "CompletionRequest",
    "DetokenizeRequest",
    "InfillChunk",
    "InfillRequest",
    "NativeCompletionRequest",
    "SamplingFields",
    "TokenizeRequest",
]

Probability = Annotated[float, Meta(ge=0.0, le=1.0)]
Penalty = Annotated[float, Meta(ge=-2.0, le=2.0)]
TokenBudget = Annotated[int, Meta(ge=-1)]


class SamplingFields(msgspec.Struct, kw_only=True):
    temperature: Annotated[float, Meta(ge=0.0)] | None = None
    top_k: Annotated[int, Meta(ge=0)] = 40
    top_p: Probability = 0.95
    min_p: Probability = 0.05
    typical_p: Probability = 1.0
    repeat_penalty: Annotated[float, Meta(gt=0.0)] = 1.0
    repeat_last_n: Annotated[int, Meta(ge=-1)] = 64
    presence_penalty: Penalty = 0.0
    frequency_penalty: Penalty = 0.0
    seed: int | None = None
    stop: str | list[str] | None = None
    ignore_eos: bool = False
    cache_prompt: bool = True
    logit_bias: dict[str, float] | list[list[float]] | None = None
    grammar: str | None = None
    json_schema: dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    stream: bool = False
    model: str | None = None


class ChatMessage(msgspec.Struct, omit_defaults=True):
    role: str
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None


class ChatRequest(SamplingFields, kw_only=True):
    messages: Annotated[list[ChatMessage], Meta(min_length=1)]
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    max_tokens: TokenBudget | None = None
    max_completion_tokens: TokenBudget | None = None
    n_predict: TokenBudget | None = None


class CompletionRequest(SamplingFields, kw_only=True):
    """OpenAI ``/v1/completions``."""

    prompt: str | list[int]
    max_tokens: TokenBudget | None = None
    n_predict: TokenBudget | None = None
    echo: bool = False


class NativeCompletionRequest(SamplingFields, kw_only=True):
    """llama-server's own ``/completion``."""

    prompt: str | list[int]
    n_predict: TokenBudget | None = None
    max_tokens: TokenBudget | None = None


class InfillChunk(msgspec.Struct):
    text: str = ""
    filename: str = "tmp"


class InfillRequest(SamplingFields, kw_only=True):
    """llama-server's ``/infill``: fill in between a prefix and a suffix (code models)."""

    input_prefix: str = ""
    input_suffix: str = ""
    input_extra: list[InfillChunk] = msgspec.field(default_factory=list)
    prompt: str = ""
    n_predict: TokenBudget | None = None
    max_tokens: TokenBudget | None = None


class TokenizeRequest(msgspec.Struct, kw_only=True):
    content: str
    add_special: bool = False
    parse_special: bool = True
    with_pieces: bool = False


class DetokenizeRequest(msgspec.Struct, kw_only=True):
    tokens: list[Annotated[int, Meta(ge=0)]]
