"""llama-server's ``generation_settings``: a request's sampling settings, named as upstream.

``/props`` shows the defaults (``default_generation_settings.params``) and llama-server's own
``/completion`` answers carry the settings a request ran with (``generation_settings``), which
clients read back (the seed, the budget). The keys and their order are upstream's
(server-task.cpp, ``task_params::to_json``).
"""

from __future__ import annotations

import math
from typing import Any

from corral.options.sampling_fields import IGNORE_EOS, LOGIT_BIAS, SAMPLING_FIELDS
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
    """The ``params`` object of llama-server's ``/props`` and ``generation_settings``: every
    sampling field, with the request's own settings where upstream writes them among those."""
    settings: dict[str, Any] = {}
    for row in SAMPLING_FIELDS:
        if row is IGNORE_EOS:
            settings |= {
                "stop": stops or [],
                "max_tokens": n_predict,
                "n_predict": n_predict,
                "n_keep": n_keep,
            }
        settings[row.request] = _shown(getattr(params, row.request))
        if row is IGNORE_EOS:
            settings["stream"] = stream
        elif row is LOGIT_BIAS:
            settings["n_probs"] = n_probs
    return settings


def _shown(value: Any) -> Any:
    """A setting as JSON shows it: tuples as arrays, biases as upstream's list of them."""
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        # -inf (a banned token) is null in JSON, as upstream writes it.
        return [
            {"bias": bias if math.isfinite(bias) else None, "token": token}
            for token, bias in value.items()
        ]
    return value
