"""Synthetic acceptance (``--spec-synth-len``, ``--spec-synth-rates``): for benchmarks only.

As llama-server's: guesses are kept at random, at given rates per position, instead of when the
model agrees, so a benchmark can fix the acceptance it measures; the text is not the model's.
``rates[i]`` is the chance that a step keeps more than ``i`` guesses; the chance at each
position, given the ones before it were kept, is its rate over the one before
(``common_speculative_synth_rates_resolve`` in common/speculative.cpp).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["synthetic_chances"]


def _rates_for_length(length: float, n_max: int) -> list[float]:
    """Geometric rates whose mean accepted length (counting the sampled token) is ``length``."""
    longest = n_max + 1.0
    if not math.isfinite(length) or not 1.0 <= length <= longest:
        raise ValueError(f"--spec-synth-len must be within [1, {longest:.0f}], got {length}")
    if length == longest:
        p = 1.0
    elif length == 1.0:
        p = 0.0
    else:  # bisect p so that p + p^2 + ... + p^n_max = length - 1
        low, high = 0.0, 1.0
        for _ in range(32):
            p = (low + high) / 2
            if sum(p ** (j + 1) for j in range(n_max)) < length - 1.0:
                low = p
            else:
                high = p
        p = (low + high) / 2
    return [p ** (i + 1) for i in range(n_max)]


def synthetic_chances(
    length: float | None, rates: Sequence[float], n_max: int
) -> tuple[float, ...]:
    """Each position's chance of keeping its guess; empty when neither option is set."""
    if length is None and not rates:
        return ()
    if length is not None and rates:
        raise ValueError("--spec-synth-len and --spec-synth-rates cannot be used together")
    if n_max <= 0:
        raise ValueError("synthetic acceptance needs at least one guessed token")
    if length is not None:
        rates = _rates_for_length(length, n_max)
    if len(rates) != n_max:
        raise ValueError(f"--spec-synth-rates must have {n_max} values, got {len(rates)}")
    for i, rate in enumerate(rates):
        if not (math.isfinite(rate) and 0.0 <= rate <= 1.0):
            raise ValueError("--spec-synth-rates must be within [0, 1]")
        if i and rate > rates[i - 1]:
            raise ValueError("--spec-synth-rates must not increase")
    previous = 1.0
    chances = []
    for rate in rates:
        chances.append(rate / previous if previous > 0.0 else 0.0)
        previous = rate
    return tuple(chances)
