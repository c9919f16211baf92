"""The sampling fields shared by every generation request (docs/protocol.md §6).

They carry llama-server's names. Unknown fields are ignored, as upstream does; known ones are
type- and range-checked so a bad value is a 400 that names the field.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from worker.engine.lora_adapters import LoraChoice

__all__ = ["SamplingFields", "StreamOptions", "TokenBudget"]

TokenBudget = Annotated[int, Meta(ge=-1)]


class StreamOptions(msgspec.Struct):
    include_usage: bool = False  # OpenAI's: a last chunk with the usage and no choices


class SamplingFields(msgspec.Struct, kw_only=True):
    # Sampling: None (absent or null) keeps the worker's default. Any JSON decodes here: the
    # numbers are type-checked, clamped or refused as llama-server does, in its words
    # (worker.answer.sampling_request), each as its row in corral/options/sampling_fields.py says;
    # tests/corral/options/test_sampling_fields.py checks every row has its field here.
    temperature: Any = None
    dynatemp_range: Any = None
    dynatemp_exponent: Any = None
    top_k: Any = None
    top_p: Any = None
    min_p: Any = None
    typical_p: Any = None
    top_n_sigma: Any = None
    xtc_probability: Any = None
    xtc_threshold: Any = None
    repeat_penalty: Any = None
    repeat_last_n: Any = None
    presence_penalty: Any = None
    frequency_penalty: Any = None
    dry_multiplier: Any = None
    dry_base: Any = None
    dry_allowed_length: Any = None
    dry_penalty_last_n: Any = None
    mirostat: Any = None
    mirostat_tau: Any = None
    mirostat_eta: Any = None
    adaptive_target: Any = None
    adaptive_decay: Any = None
    min_keep: Any = None
    dry_sequence_breakers: Any = None  # a non-empty array of strings (checked as upstream)
    # Checked as llama-server checks them (worker.answer.sampling_request).
    n_indent: Any = None  # a line indented less than this ends the answer (after a new line)
    t_max_predict_ms: Any = None  # ms of generation after which a new line ends it
    samplers: Any = None  # names (an array) or letters (a string), as upstream
    seed: int | None = None
    stop: str | list[str] | None = None
    ignore_eos: bool | None = None  # None: the worker's --ignore-eos
    cache_prompt: bool | None = None  # None: the worker's --[no-]cache-prompt
    n_cache_reuse: Annotated[int, Meta(ge=0)] | None = None  # None: the worker's --cache-reuse
    id_slot: int = -1  # run on this slot (wrapped around), waiting for it; -1: any
    # Keys and list entries are token ids or strings (worker.sampling.logit_bias); false bans a
    # token.
    logit_bias: dict[str, float | bool] | list[list[Any]] | None = None
    n_probs: Annotated[int, Meta(ge=0)] = 0
    n_keep: Annotated[int, Meta(ge=-1)] | None = None  # a context shift keeps this much prompt
    post_sampling_probs: bool = False
    grammar: str | None = None
    # any JSON: what is not a schema, the converter refuses in llama-server's words
    json_schema: Any = None
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
