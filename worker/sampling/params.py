"""A request's sampling settings, as llama.cpp's ``common_params_sampling`` holds them.

The defaults are llama.cpp's (common/common.h); a worker's own defaults come from its options
(``--temp``, ``--top-k``, …, :mod:`worker.settings.parse`), and each request starts from those, as
llama-server's ``params_from_json_cmpl`` does (:mod:`worker.answer.sampling_request`). The
sampler names and letters are upstream's (common/sampling.cpp), aliases included.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from corral.options import sampling_fields as rows
from corral.options.model_options import ModelOptions
from worker.sampling.reasoning_budget import ReasoningBudget

__all__ = [
    "DEFAULT_SAMPLERS",
    "SAMPLER_CHARS",
    "SamplingParams",
    "samplers_from_chars",
    "samplers_from_names",
]

# llama-server's defaults, from the option table: a model given no sampling flags. Each field's
# option is its row's in the table of sampling fields (corral/options/sampling_fields.py).
_SERVER = ModelOptions()

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

    temperature: float = _SERVER.real(rows.TEMPERATURE.option)
    dynatemp_range: float = _SERVER.real(rows.DYNATEMP_RANGE.option)
    dynatemp_exponent: float = _SERVER.real(rows.DYNATEMP_EXPONENT.option)
    top_k: int = _SERVER.integer(rows.TOP_K.option)
    top_p: float = _SERVER.real(rows.TOP_P.option)
    min_p: float = _SERVER.real(rows.MIN_P.option)
    typical_p: float = _SERVER.real(rows.TYPICAL_P.option)
    top_n_sigma: float = _SERVER.real(rows.TOP_N_SIGMA.option)
    xtc_probability: float = _SERVER.real(rows.XTC_PROBABILITY.option)
    xtc_threshold: float = _SERVER.real(rows.XTC_THRESHOLD.option)
    repeat_last_n: int = _SERVER.integer(rows.REPEAT_LAST_N.option)
    repeat_penalty: float = _SERVER.real(rows.REPEAT_PENALTY.option)
    presence_penalty: float = _SERVER.real(rows.PRESENCE_PENALTY.option)
    frequency_penalty: float = _SERVER.real(rows.FREQUENCY_PENALTY.option)
    dry_multiplier: float = _SERVER.real(rows.DRY_MULTIPLIER.option)
    dry_base: float = _SERVER.real(rows.DRY_BASE.option)
    dry_allowed_length: int = _SERVER.integer(rows.DRY_ALLOWED_LENGTH.option)
    dry_penalty_last_n: int = _SERVER.integer(rows.DRY_PENALTY_LAST_N.option)
    dry_sequence_breakers: tuple[str, ...] = ("\n", ":", '"', "*")
    mirostat: int = _SERVER.integer(rows.MIROSTAT.option)  # 0: off, 1: Mirostat, 2: Mirostat 2.0
    mirostat_tau: float = _SERVER.real(rows.MIROSTAT_TAU.option)
    mirostat_eta: float = _SERVER.real(rows.MIROSTAT_ETA.option)
    adaptive_target: float = _SERVER.real(rows.ADAPTIVE_TARGET.option)
    adaptive_decay: float = _SERVER.real(rows.ADAPTIVE_DECAY.option)
    min_keep: int = 0
    # End-of-generation tokens are banned (a logit bias of -inf).
    ignore_eos: bool = _SERVER.flag(rows.IGNORE_EOS.option)
    samplers: tuple[str, ...] = DEFAULT_SAMPLERS
    seed: int = _SERVER.integer(rows.SEED.option)
    logit_bias: dict[int, float] = field(default_factory=dict)
    text_bias: tuple[tuple[str, float], ...] = ()  # by text, tokenized as the request is queued
    grammar: str | None = None  # GBNF, from `grammar`, `json_schema` or `response_format`
    grammar_triggers: tuple[str, ...] = ()  # patterns a lazy (tool-call) grammar waits for
    reasoning_budget: ReasoningBudget | None = None  # --reasoning-budget, as tokens to watch
