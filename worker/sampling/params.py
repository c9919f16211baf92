"""A request's sampling settings, as llama.cpp's ``common_params_sampling`` holds them.

The defaults are llama.cpp's (common/common.h); a worker's own defaults come from its options
(``--temp``, ``--top-k``, …, :mod:`worker.settings`), and each request starts from those, as
llama-server's ``params_from_json_cmpl`` does (:mod:`worker.answer.sampling_request`). The
sampler names and letters are upstream's (common/sampling.cpp), aliases included.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from worker.sampling.reasoning_budget import ReasoningBudget

__all__ = [
    "DEFAULT_SAMPLERS",
    "SAMPLER_CHARS",
    "SamplingParams",
    "samplers_from_chars",
    "samplers_from_names",
]

# The samplers a chain runs, in upstream's canonical names, and its default order.
DEFAULT_SAMPLERS = (
    "penalties",
    "dry",
    "top_n_sigma",
    "top_k",
    "typ_p",
    "top_p",
    "min_p",
    "xtc",
    "temperature",
)
_CANONICAL = (
    "dry",
    "top_k",
    "top_p",
    "top_n_sigma",
    "typ_p",
    "min_p",
    "temperature",
    "xtc",
    "infill",
    "penalties",
    "adaptive_p",
)
# common_sampler_type_to_chr: the letters of --sampling-seq and of a "samplers" string.
SAMPLER_CHARS = {
    "d": "dry",
    "k": "top_k",
    "y": "typ_p",
    "p": "top_p",
    "s": "top_n_sigma",
    "m": "min_p",
    "t": "temperature",
    "x": "xtc",
    "i": "infill",
    "e": "penalties",
    "a": "adaptive_p",
}


def _name_map() -> dict[str, str]:
    names = {name: name for name in _CANONICAL}
    for name in _CANONICAL:
        if "_" in name:  # upstream's generated aliases: top-k and topk
            names.setdefault(name.replace("_", "-"), name)
            names.setdefault(name.replace("_", ""), name)
    names.update(nucleus="top_p", temp="temperature", typ="typ_p")
    return names


_BY_NAME = _name_map()


def samplers_from_names(names: list[str]) -> tuple[str, ...]:
    """Upstream's ``common_sampler_types_from_names``: any case, aliases allowed; a name it
    does not know is left out (llama-server logs a warning and goes on)."""
    return tuple(_BY_NAME[name.lower()] for name in names if name.lower() in _BY_NAME)


def samplers_from_chars(chars: str) -> tuple[str, ...]:
    """``common_sampler_types_from_chars``: one letter per sampler, unknown letters left out."""
    return tuple(SAMPLER_CHARS[char] for char in chars if char in SAMPLER_CHARS)


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """Every sampling setting of one request; the defaults are llama.cpp's (common.h)."""

    temperature: float = 0.8
    dynatemp_range: float = 0.0
    dynatemp_exponent: float = 1.0
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    typical_p: float = 1.0
    top_n_sigma: float = -1.0
    xtc_probability: float = 0.0
    xtc_threshold: float = 0.1
    repeat_last_n: int = 64
    repeat_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    dry_multiplier: float = 0.0
    dry_base: float = 1.75
    dry_allowed_length: int = 2
    dry_penalty_last_n: int = 64
    dry_sequence_breakers: tuple[str, ...] = ("\n", ":", '"', "*")
    mirostat: int = 0  # 0: off, 1: Mirostat, 2: Mirostat 2.0
    mirostat_tau: float = 5.0
    mirostat_eta: float = 0.1
    adaptive_target: float = -1.0
    adaptive_decay: float = 0.9
    min_keep: int = 0
    ignore_eos: bool = False  # end-of-generation tokens are banned (a logit bias of -inf)
    samplers: tuple[str, ...] = DEFAULT_SAMPLERS
    seed: int = -1
    logit_bias: dict[int, float] = field(default_factory=dict)
    text_bias: tuple[tuple[str, float], ...] = ()  # by text, tokenized as the request is queued
    grammar: str | None = None  # GBNF, from `grammar`, `json_schema` or `response_format`
    grammar_triggers: tuple[str, ...] = ()  # patterns a lazy (tool-call) grammar waits for
    reasoning_budget: ReasoningBudget | None = None  # --reasoning-budget, as tokens to watch
