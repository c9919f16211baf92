"""What a per-model option's row holds, and the parsers behind its values.

The kinds, roles and bounds :data:`corral.options.table.OPTIONS` is written in, and the parsers
each kind's object (:mod:`corral.options.kinds`) normalises with ("on" → "true", "1e3" →
"1000"), which keeps the settings of two reloads comparable as plain strings. Callers import
these from :mod:`corral.options.table`, the table's front door.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "OptionError",
    "OptionSpec",
    "check_bound",
    "format_float",
    "list_items",
    "number_item",
    "parse_bool",
    "parse_size",
    "scaled_item",
    "string_items",
]

# int/float/str as named; bool: on|off words; switch: on|off|auto (flash-attn); choice: one of
# ``literals``; choices: a comma-separated list of them (``--spec-type``); size: bytes, with an
# optional K/M/G/T suffix (powers of 1024); list: a comma list whose flag may be repeated
# (--lora); strings: a repeatable flag whose every value is one string, commas included (-r),
# held as a JSON array of them; scaled-list: a list of FILE:SCALE items (--lora-scaled);
# on-off: a bool written with its value, ``--fit on``; numbers: non-negative numbers split by
# commas or slashes, as llama-server's --tensor-split and --fit-target; pair: two integers, a flag
# of two values (--control-vector-layer-range START END), held as ``START,END``. Each is one
# object of corral/options/kinds.py, which says all a kind means.
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


def format_float(number: float) -> str:
    text = repr(number)
    return text.removesuffix(".0")


def check_bound(spec: OptionSpec, number: float, raw: str) -> None:
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


def list_items(raw: str) -> list[str]:
    items = [item.strip() for item in raw.split(",") if item.strip()]
    if not items:
        raise ValueError("expected one or more comma-separated values, got nothing")
    return items


def scaled_item(item: str) -> str:
    path, colon, scale = item.rpartition(":")
    try:
        number = float(scale) if colon and path else math.nan
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise ValueError(f"expected FILE:SCALE, got '{item}'")
    return f"{path}:{format_float(number)}"


def number_item(item: str) -> str:
    try:
        number = float(item)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"expected numbers of at least 0 split by commas, got '{item}'")
    return format_float(number)


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
