"""The sampling fields shared by every generation request (docs/protocol.md §6).

They carry llama-server's names. Unknown fields are ignored, as upstream does; known ones are
type- and range-checked so a bad value is a 400 that names the field.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from worker.engine.lora_adapters import LoraChoice

__all__ = ["Penalty", "Probability", "SamplingFields", "StreamOptions", "TokenBudget"]

Probability = Annotated[float, Meta(ge=0.0, le=1.0)]
Penalty = Annotated[float, Meta(ge=-2.0, le=2.0)]
TokenBudget = Annotated[int, Meta(ge=-1)]


class StreamOptions(msgspec.Struct):
    include_usage: bool = False  # OpenAI's: a last chunk with the usage and no choices


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
    cache_prompt: bool | None = None  # None: the worker's --[no-]cache-prompt
    id_slot: int = -1  # run on this slot (wrapped around), waiting for it; -1: any
    # Keys and list entries are token ids or strings (worker.sampling.logit_bias); false bans a
    # token.
    logit_bias: dict[str, float | bool] | list[list[Any]] | None = None
    n_probs: Annotated[int, Meta(ge=0)] = 0
    n_keep: Annotated[int, Meta(ge=-1)] | None = None  # a context shift keeps this much prompt
    post_sampling_probs: bool = False
    grammar: str | None = None
    json_schema: dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    lora: list[LoraChoice] | None = None  # this request's LoRA adapter scales (docs/api.md)
    stream: bool = False
    stream_options: StreamOptions | None = None
    return_progress: bool = False  # streamed: prompt_progress chunks while the prompt is read
    timings_per_token: bool = False  # streamed: timings in every chunk
    # How many completions of each prompt: llama-server's n_cmpl, or OpenAI's n (docs/api.md).
    n_cmpl: int | None = None
    n: int | None = None
    verbose: bool | None = None  # None: the worker's --verbose
    model: str | None = None
