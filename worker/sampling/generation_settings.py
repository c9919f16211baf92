"""llama-server's ``generation_settings``: a request's sampling settings, named as upstream.

``/props`` shows the defaults (``default_generation_settings.params``) and llama-server's own
``/completion`` answers carry the settings a request ran with (``generation_settings``), which
clients read back (the seed, the budget). Upstream's samplers Corral does not run (DRY, XTC,
mirostat, dynamic temperature, adaptive-p) are reported at their disabled values.
"""

from __future__ import annotations

import math
from typing import Any

from worker.sampling.chain import SamplingParams

__all__ = ["generation_settings"]

# Upstream's fields for samplers Corral does not run, at the values that switch them off
# (common/common.h).
_UNUSED_SAMPLERS: dict[str, Any] = {
    "dynatemp_range": 0.0,
    "dynatemp_exponent": 1.0,
    "top_n_sigma": -1.0,
    "xtc_probability": 0.0,
    "xtc_threshold": 0.1,
    "dry_multiplier": 0.0,
    "dry_base": 1.75,
    "dry_allowed_length": 2,
    "dry_penalty_last_n": -1,
    "dry_sequence_breakers": ["\n", ":", '"', "*"],
    "mirostat": 0,
    "mirostat_tau": 5.0,
    "mirostat_eta": 0.1,
    "adaptive_target": -1.0,
    "adaptive_decay": 0.9,
}


def generation_settings(
    params: SamplingParams,
    *,
    n_predict: int,
    n_keep: int = 0,
    stops: list[str] | None = None,
    ignore_eos: bool = False,
    stream: bool = False,
    n_probs: int = 0,
) -> dict[str, Any]:
    """The ``params`` object of llama-server's ``/props`` and ``generation_settings``."""
    return {
        "seed": params.seed,
        "temperature": params.temperature,
        "top_k": params.top_k,
        "top_p": params.top_p,
        "min_p": params.min_p,
        "typical_p": params.typical_p,
        "repeat_last_n": params.repeat_last_n,
        "repeat_penalty": params.repeat_penalty,
        "presence_penalty": params.presence_penalty,
        "frequency_penalty": params.frequency_penalty,
        **_UNUSED_SAMPLERS,
        "stop": stops or [],
        "max_tokens": n_predict,
        "n_predict": n_predict,
        "n_keep": n_keep,
        "ignore_eos": ignore_eos,
        "stream": stream,
        # -inf (a banned token) is null in JSON, as upstream writes it.
        "logit_bias": [
            {"bias": bias if math.isfinite(bias) else None, "token": token}
            for token, bias in params.logit_bias.items()
        ],
        "n_probs": n_probs,
        "min_keep": 0,
        "samplers": ["penalties", "top_k", "typ_p", "top_p", "min_p", "temperature"],
    }
