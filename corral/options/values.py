"""What a per-model option's value may be, and how a raw value becomes its canonical text.

The kinds, roles and bounds :data:`corral.options.table.OPTIONS` is written in, and the parsers
behind them. Values are validated and normalised here ("on" → "true", "1e3" → "1000"), which
keeps the settings of two reloads comparable as plain strings. Callers import these from
:mod:`corral.options.table`, the table's front door.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "OptionError",
    "OptionSpec",
    "normalise_value",
    "parse_bool",
    "parse_size",
    "string_items",
    "typed_value",
]

# int/float/str as named; bool: on|off words; switch: on|off|auto (flash-attn); choice: one of
# ``literals``; choices: a comma-separated list of them (``--spec-type``); size: bytes, with an
# optional K/M/G/T suffix (powers of 1024); list: a comma list whose flag may be repeated
# (--lora); strings: a repeatable flag whose every value is one string, commas included (-r),
# held as a JSON array of them; scaled-list: a list of FILE:SCALE items (--lora-scaled);
# on-off: a bool written with its value, ``--fit on``; numbers: non-negative numbers split by
# commas or slashes, as llama-server's --tensor-split and --fit-target; pair: two integers, a flag
# of two values (--control-vector-layer-range START END), held as ``START,END``.
OptionKind = Literal[
    "int",
    "float",
    "str",
    "bool",
    "switch",
    "choice",
    "choices",
    "size",
    "list",
    "strings",
    "scaled-list",
    "on-off",
    "numbers",
    "pair",
]
# worker: rendered as a worker flag; model: shapes the catalogue entry (path, names);
# preset: read by the router only (upstream's preset-only keys and Corral's own).
OptionRole = Literal["worker", "model", "preset"]
Bound = Literal["any", "non_negative", "positive"]

# yes/no are Corral's extension: llama.cpp's preset and LLAMA_ARG_* parser knows only the other
# words, but `pin = yes` is what people write in an INI file, so every boolean accepts them.
_TRUTHY = frozenset({"on", "enabled", "true", "1", "yes"})
_FALSEY = frozenset({"off", "disabled", "false", "0", "no"})


class OptionError(ValueError):
    """An option is unknown or its value malformed; the message says where and what."""


@dataclass(frozen=True, slots=True)
class OptionSpec:
    name: str  # canonical long flag without dashes; the worker accepts ``--{name}``
    kind: OptionKind
    role: OptionRole = "worker"
    spellings: tuple[str, ...] = ()  # other flag spellings without dashes, and env names
    # Spellings meaning false; the first is the worker flag. As upstream, a bool with a negative
    # flag also has a LLAMA_ARG_NO_* variable, which turns it off whatever its value.
    negatives: tuple[str, ...] = ()
    bound: Bound = "any"
    literals: tuple[str, ...] = ()  # words accepted besides a number, or a choice's values
    # llama-server's default (common/common.h, common/arg.cpp) as canonical text; None: unset
    # means something no value says (the model's own, the CPU count), which the reader decides.
    default: str | None = None
    # What it means, as Markdown: `corral serve --help` (backticks dropped) and the docs.
    help: str = ""
    # The WorkerSettings field a worker-role option fills, its value converted by its kind
    # (worker/settings/); None: a router-only option, one a named derivation reads
    # (worker/settings/derived.py), or one with no effect.
    dest: str | None = None
    # Why a worker-role option has no effect (the worker logs it when given); None: it has one.
    no_effect: str | None = None


def _format_float(number: float) -> str:
    text = repr(number)
    return text.removesuffix(".0")


def _check_bound(spec: OptionSpec, number: float, raw: str) -> None:
    if spec.bound == "positive" and number <= 0:
        raise ValueError(f"expected a number above 0, got '{raw}'")
    if spec.bound == "non_negative" and number < 0:
        raise ValueError(f"expected a number of at least 0, got '{raw}'")


def parse_bool(raw: str) -> bool:
    """An on/off word as llama.cpp reads them (plus yes/no); ``ValueError`` for anything else."""
    word = raw.lower()
    if word in _TRUTHY:
        return True
    if word in _FALSEY:
        return False
    raise ValueError(f"expected on|off|true|false|yes|no|enabled|disabled|1|0, got '{raw}'")


_SIZE = re.compile(r"(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>[kmgt]?)(?:i?b)?", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(raw: str) -> int:
    """Bytes from ``512M``, ``8G``, ``1.5GiB`` or a plain number; K/M/G/T are powers of 1024."""
    match = _SIZE.fullmatch(raw.strip())
    if match is None:
        raise ValueError(f"expected a size such as 512M or 8G, got '{raw}'")
    return int(float(match["number"]) * _SIZE_UNITS[match["unit"].lower()])


def _list_items(raw: str) -> list[str]:
    items = [item.strip() for item in raw.split(",") if item.strip()]
    if not items:
        raise ValueError("expected one or more comma-separated values, got nothing")
    return items


def _scaled_item(item: str) -> str:
    path, colon, scale = item.rpartition(":")
    try:
        number = float(scale) if colon and path else math.nan
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise ValueError(f"expected FILE:SCALE, got '{item}'")
    return f"{path}:{_format_float(number)}"


def _number_item(item: str) -> str:
    try:
        number = float(item)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"expected numbers of at least 0 split by commas, got '{item}'")
    return _format_float(number)


def string_items(raw: str) -> list[str]:
    """A ``strings`` value's items: a JSON array of strings (the canonical text, or several
    written in a preset), else the text itself as the only one."""
    try:
        items = json.loads(raw)
    except ValueError:
        return [raw]
    if isinstance(items, list) and items and all(isinstance(item, str) for item in items):
        return items
    return [raw]


def normalise_value(spec: OptionSpec, raw: str, *, negated: bool) -> str:
    """The canonical text of a value; ``ValueError`` says what was expected."""
    if spec.kind == "list":
        return ",".join(_list_items(raw))
    if spec.kind == "scaled-list":
        return ",".join(_scaled_item(item) for item in _list_items(raw))
    if spec.kind == "strings":
        return json.dumps(string_items(raw))
    if spec.kind == "bool":
        return "true" if parse_bool(raw) != negated else "false"
    if spec.kind == "on-off":
        return "on" if parse_bool(raw) != negated else "off"
    if spec.kind == "numbers":
        return ",".join(_number_item(item) for item in re.split(r"[,/]+", raw.strip()))
    if spec.kind == "pair":
        items = [item for item in re.split(r"[,\s]+", raw.strip()) if item]
        if len(items) != 2 or not all(re.fullmatch(r"-?\d+", item) for item in items):
            raise ValueError(f"expected two integers, got '{raw}'")
        return ",".join(str(int(item)) for item in items)
    if spec.kind == "switch":
        if raw.lower() in ("auto", "-1"):
            return "auto"
        return "on" if parse_bool(raw) else "off"
    if spec.kind == "choice":
        if raw.lower() not in spec.literals:
            raise ValueError(f"expected one of {', '.join(spec.literals)}, got '{raw}'")
        return raw.lower()
    if spec.kind == "choices":
        words = [word.strip().lower() for word in raw.split(",")]
        unknown = [word for word in words if word not in spec.literals]
        if unknown:
            raise ValueError(f"expected some of {', '.join(spec.literals)}, got '{unknown[0]}'")
        return ",".join(words)
    if spec.kind == "str":
        return raw
    if spec.kind == "size":
        return str(parse_size(raw))
    if raw in spec.literals:
        return raw
    if spec.kind == "int":
        try:
            number = int(raw)
        except ValueError:
            raise ValueError(f"expected an integer, got '{raw}'") from None
        _check_bound(spec, number, raw)
        return str(number)
    try:
        real = float(raw)
    except ValueError:
        raise ValueError(f"expected a number, got '{raw}'") from None
    if not math.isfinite(real):
        raise ValueError(f"expected a finite number, got '{raw}'")
    _check_bound(spec, real, raw)
    return _format_float(real)


def _items(text: str) -> tuple[str, ...]:
    return tuple(item for item in text.split(",") if item)


def _scaled(text: str) -> tuple[tuple[str, float], ...]:
    return tuple(
        (path, float(scale)) for path, _, scale in (i.rpartition(":") for i in _items(text))
    )


def _pair(text: str) -> tuple[int, int]:
    first, _, last = text.partition(",")
    return int(first), int(last)


# The value a setting holds of each kind, from its canonical text.
_TYPED: dict[str, Callable[[str], Any]] = {
    "int": int,
    "size": int,
    "float": float,
    "bool": lambda text: text == "true",
    "on-off": lambda text: text == "on",
    "str": str,
    "choice": str,
    "switch": str,
    "list": _items,
    "choices": _items,
    "strings": lambda text: tuple(string_items(text)),
    "scaled-list": _scaled,
    "numbers": lambda text: tuple(float(item) for item in _items(text)),
    "pair": _pair,
}


def typed_value(spec: OptionSpec, text: str) -> Any:
    """An option's canonical text as the value a setting holds: ``"2048"`` → 2048, ``"true"`` →
    True, a list → a tuple of its items, a pair → two integers."""
    return _TYPED[spec.kind](text)
