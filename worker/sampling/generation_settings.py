"""llama-server's ``generation_settings``: a request's sampling settings, named as upstream.

``/props`` shows the defaults (``default_generation_settings.params``) and llama-server's own
``/completion`` answers carry the settings a request ran with (``generation_settings``), which
clients read back (the seed, the budget). The keys and their order are upstream's
(server-task.cpp, ``task_params::to_json``).
"""

from __future__ import annotations

import math
from typing import Any

from worker.sampling.params import SamplingParams

__all__ = ["generation_settings"]


def generation_settings(
    params: SamplingParams,
    *,
    n_predict: int,
    n_keep: int = 0,
    stops: list[str] | None = None,
    stream: bool = False,
    n_probs: int = 0,
) -> dict[str, Any]:
    """The ``params`` object of llama-server's ``/props`` and ``generation_settings``."""
    return {
        "seed": params.seed,
        "temperature": params.temperature,
        "dynatemp_range": params.dynatemp_range,
        "dynatemp_exponent": params.dynatemp_exponent,
        "top_k": params.top_k,
        "top_p": params.top_p,
        "min_p": params.min_p,
        "top_n_sigma": params.top_n_sigma,
        "xtc_probability": params.xtc_probability,
        "xtc_threshold": params.xtc_threshold,
        "typical_p": params.typical_p,
        "repeat_last_n": params.repeat_last_n,
        "repeat_penalty": params.repeat_penalty,
        "presence_penalty": params.presence_penalty,
        "frequency_penalty": params.frequency_penalty,
        "dry_multiplier": params.dry_multiplier,
        "dry_base": params.dry_base,
        "dry_allowed_length": params.dry_allowed_length,
        "dry_penalty_last_n": params.dry_penalty_last_n,
        "dry_sequence_breakers": list(params.dry_sequence_breakers),
        "mirostat": params.mirostat,
        "mirostat_tau": params.mirostat_tau,
        "mirostat_eta": params.mirostat_eta,
        "adaptive_target": params.adaptive_target,
        "adaptive_decay": params.adaptive_decay,
        "stop": stops or [],
        "max_tokens": n_predict,
        "n_predict": n_predict,
        "n_keep": n_keep,
        "ignore_eos": params.ignore_eos,
        "stream": stream,
        # -inf (a banned token) is null in JSON, as upstream writes it.
        "logit_bias": [
            {"bias": bias if math.isfinite(bias) else None, "token": token}
            for token, bias in params.logit_bias.items()
        ],
        "n_probs": n_probs,
        "min_keep": params.min_keep,
        "samplers": list(params.samplers),
    }
