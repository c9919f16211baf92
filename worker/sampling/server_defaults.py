"""A worker's sampling defaults, from its options as llama-server reads its sampling flags.

Every request starts from these (llama-server's ``params_base.sampling``), and ``/props``
shows them. The flags' names and quirks are common/arg.cpp's: a ``--dry-base`` below 1 is
ignored, ``--dry-sequence-breaker none`` clears the breakers, ``--samplers`` is a ``;`` list of
names, ``--sampler-seq`` a string of letters and ``-l/--logit-bias`` ``TOKEN_ID(+/-)BIAS``
(repeatable; the biases of one token add up, as upstream's list of them). A model file can carry
its own defaults (``general.sampling.*``), which count where no flag was given, as llama.cpp's
``common_init_sampler_from_model``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import fields, replace
from typing import Any

from corral.options.model_options import ModelOptions
from worker.sampling.params import SamplingParams, samplers_from_chars, samplers_from_names

__all__ = ["model_sampling_defaults", "parse_server_logit_bias", "sampling_defaults"]

# Option name → SamplingParams field, for the plain numbers.
_FLOATS = {
    "temp": "temperature",
    "top-p": "top_p",
    "min-p": "min_p",
    "typical": "typical_p",
    "top-nsigma": "top_n_sigma",
    "xtc-probability": "xtc_probability",
    "xtc-threshold": "xtc_threshold",
    "repeat-penalty": "repeat_penalty",
    "presence-penalty": "presence_penalty",
    "frequency-penalty": "frequency_penalty",
    "dry-multiplier": "dry_multiplier",
    "dry-base": "dry_base",
    "dynatemp-range": "dynatemp_range",
    "dynatemp-exp": "dynatemp_exponent",
    "mirostat-lr": "mirostat_eta",
    "mirostat-ent": "mirostat_tau",
    "adaptive-target": "adaptive_target",
    "adaptive-decay": "adaptive_decay",
}
_INTS = {
    "seed": "seed",
    "top-k": "top_k",
    "repeat-last-n": "repeat_last_n",
    "dry-allowed-length": "dry_allowed_length",
    "dry-penalty-last-n": "dry_penalty_last_n",
    "mirostat": "mirostat",
}
assert set(_FLOATS.values()) | set(_INTS.values()) <= {f.name for f in fields(SamplingParams)}


# general.sampling.<key> → (the flag that overrides it, SamplingParams field, int or not).
_MODEL_KEYS = {
    "top_k": ("top-k", "top_k", True),
    "top_p": ("top-p", "top_p", False),
    "min_p": ("min-p", "min_p", False),
    "xtc_probability": ("xtc-probability", "xtc_probability", False),
    "xtc_threshold": ("xtc-threshold", "xtc_threshold", False),
    "temp": ("temp", "temperature", False),
    "penalty_last_n": ("repeat-last-n", "repeat_last_n", True),
    "penalty_repeat": ("repeat-penalty", "repeat_penalty", False),
    "mirostat": ("mirostat", "mirostat", True),
    "mirostat_tau": ("mirostat-ent", "mirostat_tau", False),
    "mirostat_eta": ("mirostat-lr", "mirostat_eta", False),
}
# common/arg.cpp reads `ss >> key >> sign` then std::stof of the rest: an integer, a sign, a float.
_SERVER_BIAS = re.compile(r"\s*([-+]?\d+)\s*([-+])(.+)")
_LEADING_NUMBER = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def model_sampling_defaults(
    defaults: SamplingParams, metadata: Mapping[str, str], flags: frozenset[str]
) -> SamplingParams:
    """``defaults`` with the model file's ``general.sampling.*`` where no flag in ``flags``
    (option names) set the value; numbers read as strtol/strtof read them, from the front."""
    values: dict[str, Any] = {}
    for key, (flag, field, integer) in _MODEL_KEYS.items():
        raw = metadata.get(f"general.sampling.{key}")
        match = _LEADING_NUMBER.match(raw) if raw is not None and flag not in flags else None
        if match is not None:
            number = float(match.group(0))
            values[field] = int(number) if integer else number
    sequence = metadata.get("general.sampling.sequence")
    if sequence and "samplers" not in flags:
        values["samplers"] = samplers_from_names(sequence.split(";"))
    return replace(defaults, **values)


def parse_server_logit_bias(entries: Iterable[str]) -> dict[int, float]:
    """``--logit-bias`` entries as token id → bias; ``ValueError`` names an entry llama-server
    would refuse too."""
    biases: dict[int, float] = {}
    for entry in entries:
        match = _SERVER_BIAS.fullmatch(entry)
        number = _LEADING_NUMBER.match(match.group(3)) if match else None
        if match is None or number is None:
            raise ValueError(f"--logit-bias: expected TOKEN_ID(+/-)BIAS, got '{entry}'")
        token, sign = int(match.group(1)), match.group(2)
        bias = float(number.group(0)) * (-1.0 if sign == "-" else 1.0)
        biases[token] = biases.get(token, 0.0) + bias
    return biases


def sampling_defaults(options: ModelOptions) -> SamplingParams:
    """The sampling settings a request gets when it names none: the options given, else the
    table's defaults (llama-server's)."""
    values: dict[str, Any] = {field: options.real(name) for name, field in _FLOATS.items()}
    values |= {field: options.integer(name) for name, field in _INTS.items()}
    if values["dry_base"] < 1.0:  # as common/arg.cpp: a --dry-base below 1 is ignored
        values["dry_base"] = ModelOptions().real("dry-base")
    if "dry-sequence-breaker" in options:
        breakers: list[str] = []
        for breaker in options.items("dry-sequence-breaker"):
            breakers = [] if breaker == "none" else [*breakers, breaker]
        values["dry_sequence_breakers"] = tuple(breakers)
    values["ignore_eos"] = options.flag("ignore-eos")
    if "samplers" in options:
        values["samplers"] = samplers_from_names(options.word("samplers").split(";"))
    if "sampler-seq" in options:
        values["samplers"] = samplers_from_chars(options.word("sampler-seq"))
    if "logit-bias" in options:
        values["logit_bias"] = parse_server_logit_bias(options.items("logit-bias"))
    return SamplingParams(**values)
