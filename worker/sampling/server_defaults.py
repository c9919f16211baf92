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
from dataclasses import replace
from typing import Any

from corral.options.model_options import ModelOptions
from corral.options.sampling_fields import (
    DRY_SEQUENCE_BREAKERS,
    LOGIT_BIAS,
    SAMPLERS,
    SAMPLING_FIELDS,
)
from worker.sampling.params import SamplingParams, samplers_from_chars, samplers_from_names

__all__ = ["model_sampling_defaults", "parse_server_logit_bias", "sampling_defaults"]

# The fields a model file may give a number for (general.sampling.*).
_NUMBERS = tuple(row for row in SAMPLING_FIELDS if row.gguf and row.kind in ("float", "int"))
# common/arg.cpp reads `ss >> key >> sign` then std::stof of the rest: an integer, a sign, a float.
_SERVER_BIAS = re.compile(r"\s*([-+]?\d+)\s*([-+])(.+)")
_LEADING_NUMBER = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def model_sampling_defaults(
    defaults: SamplingParams, metadata: Mapping[str, str], flags: frozenset[str]
) -> SamplingParams:
    """``defaults`` with the model file's ``general.sampling.*`` where no flag in ``flags``
    (option names) set the value; numbers read as strtol/strtof read them, from the front."""
    values: dict[str, Any] = {}
    for row in _NUMBERS:
        raw = metadata.get(row.gguf)
        match = _LEADING_NUMBER.match(raw) if raw is not None and row.option not in flags else None
        if match is not None:
            number = float(match.group(0))
            values[row.request] = int(number) if row.kind == "int" else number
    params = replace(defaults, **values)
    sequence = metadata.get(SAMPLERS.gguf)
    if sequence and SAMPLERS.option not in flags:
        params = replace(params, samplers=samplers_from_names(sequence.split(";")))
    return params


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
    values: dict[str, Any] = {}
    for row in SAMPLING_FIELDS:
        if not row.options:
            continue
        if row.kind == "float":
            values[row.request] = options.real(row.option)
        elif row.kind == "int":
            values[row.request] = options.integer(row.option)
        elif row.kind == "flag":
            values[row.request] = options.flag(row.option)
    params = SamplingParams(**values)
    if params.dry_base < 1.0:  # as common/arg.cpp: a --dry-base below 1 is ignored
        params = replace(params, dry_base=SamplingParams().dry_base)
    if DRY_SEQUENCE_BREAKERS.option in options:
        breakers: list[str] = []
        for breaker in options.items(DRY_SEQUENCE_BREAKERS.option):
            breakers = [] if breaker == "none" else [*breakers, breaker]
        params = replace(params, dry_sequence_breakers=tuple(breakers))
    by_name, by_letter = (option.name for option in SAMPLERS.options)
    if by_name in options:
        params = replace(params, samplers=samplers_from_names(options.word(by_name).split(";")))
    if by_letter in options:
        params = replace(params, samplers=samplers_from_chars(options.word(by_letter)))
    if LOGIT_BIAS.option in options:
        params = replace(
            params, logit_bias=parse_server_logit_bias(options.items(LOGIT_BIAS.option))
        )
    return params
