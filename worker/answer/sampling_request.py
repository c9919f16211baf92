"""A request's sampling fields over the worker's defaults, as llama-server's completion schema
reads them (tools/server/server-schema.cpp, ``eval_llama_cmpl_schema``).

Every request starts from the worker's own settings (``--temp``, ``--top-k``, …); a field that
is absent or null keeps the default. Upstream's limits come in two strengths, kept here: a soft
limit clamps (``top_p: 7`` is 1, ``mirostat: 3`` is Mirostat 2), a hard limit refuses the
request with a 400 naming the field. Unknown ``samplers`` names are left out, as upstream does.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from corral.http.errors import ApiError
from corral.options.sampling_fields import INT32_MAX, SAMPLING_FIELDS
from worker.answer.sampling_fields import SamplingFields
from worker.sampling.params import SamplingParams, samplers_from_chars, samplers_from_names

__all__ = ["INT32_MAX", "hard_limit", "indent", "request_sampling", "time_limit_ms"]


def _text(number: float) -> str:
    # std::to_string: integers plainly, floats as "%f".
    return str(number) if isinstance(number, int) else f"{number:f}"


def hard_limit(name: str, value: float, low: float, high: float) -> None:
    """Upstream's ``set_hard_limits``: a value outside is the request's error."""
    if not low <= value <= high:
        raise ApiError(
            400,
            f"Field '{name}': Value must be between {_text(low)} <= value <= {_text(high)}, "
            f"but got {_text(value)}",
        )


def _clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


def _json_type(value: Any) -> str:
    """nlohmann::json's name for a JSON value's type, as its errors say it."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _number(name: str, value: Any) -> float:
    # nlohmann reads a boolean as a number too (true is 1), so llama-server does.
    if _json_type(value) not in ("number", "boolean"):
        raise ApiError(
            400,
            f"Field '{name}': [json.exception.type_error.302] type must be number, "
            f"but is {_json_type(value)}",
        )
    return float(value)


def _samplers(raw: Any) -> tuple[str, ...] | None:
    if isinstance(raw, str):
        return samplers_from_chars(raw)
    if isinstance(raw, list):
        wrong = next((name for name in raw if not isinstance(name, str)), None)
        if wrong is not None:
            raise ApiError(
                400,
                "Field 'samplers': [json.exception.type_error.302] type must be string, "
                f"but is {_json_type(wrong)}",
            )
        return samplers_from_names(raw)
    return None  # upstream ignores any other type


def _breakers(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or not raw or not all(isinstance(b, str) for b in raw):
        raise ApiError(
            400,
            "Field 'dry_sequence_breakers': Error: dry_sequence_breakers must be a non-empty "
            "array of strings",
        )
    return tuple(raw)


def indent(body: SamplingFields) -> int:
    """``n_indent`` (0: none), refused outside llama-server's limits."""
    if body.n_indent is None:
        return 0
    n_indent = int(_number("n_indent", body.n_indent))
    hard_limit("n_indent", n_indent, 0, INT32_MAX)
    return n_indent


def time_limit_ms(body: SamplingFields) -> int:
    """``t_max_predict_ms`` (0: none), refused outside llama-server's limits."""
    if body.t_max_predict_ms is None:
        return 0
    limit = int(_number("t_max_predict_ms", body.t_max_predict_ms))
    hard_limit("t_max_predict_ms", limit, -1, 2**63 - 1)
    return max(limit, 0)


def request_sampling(defaults: SamplingParams, body: SamplingFields) -> SamplingParams:
    """``defaults`` with the request's sampling fields applied, in the table's order."""
    values: dict[str, Any] = {}
    for row, limit in _NUMBERS:
        if (raw := getattr(body, row.request)) is None:
            continue
        value = _number(row.request, raw)
        integer = row.kind == "int"
        if limit.strength == "hard":
            hard_limit(row.request, int(value) if integer else value, limit.low, limit.high)
        elif limit.strength == "soft":
            value = _clamp(value, limit.low, limit.high)
        values[row.request] = int(value) if integer else float(value)
    params = replace(defaults, **values)
    if body.dry_base is not None and params.dry_base < 1.0:
        params = replace(params, dry_base=defaults.dry_base)  # upstream: the server's value
    if body.repeat_penalty is not None and params.repeat_penalty <= 0:
        raise ApiError(
            400,
            "Failed to initialize samplers: penalty_repeat must be finite and greater than 0",
        )
    if body.dry_sequence_breakers is not None:
        params = replace(params, dry_sequence_breakers=_breakers(body.dry_sequence_breakers))
    if body.samplers is not None and (samplers := _samplers(body.samplers)) is not None:
        params = replace(params, samplers=samplers)
    if body.seed is not None:
        params = replace(params, seed=body.seed)
    if body.ignore_eos is not None:
        params = replace(params, ignore_eos=body.ignore_eos)
    return params


# The numbers a request may set, each with the limit llama-server's schema holds it to.
_NUMBERS = [(row, row.limit) for row in SAMPLING_FIELDS if row.limit is not None]
