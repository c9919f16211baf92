"""Each kind of option value as one object, so that a new kind is one entry of :data:`KINDS`.

A :class:`Kind` says how a raw value becomes its canonical text (validated, normalised), the
value a worker setting holds of it, how a flag takes it (no value, one, two, or repeated), how a
value is rendered back as worker flags, and how the docs describe it. The parsers behind them
are :mod:`corral.options.values`'.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from corral.options.values import (
    OptionKind,
    OptionSpec,
    check_bound,
    format_float,
    list_items,
    number_item,
    parse_bool,
    parse_size,
    scaled_item,
    string_items,
)

__all__ = ["KINDS", "Kind", "normalise_value", "typed_value"]

# switch: a flag without a value (its negatives turn it off); one: one value; two: two values
# after the flag; repeated: one value each time, the flag given as often as wanted.
Takes = Literal["switch", "one", "two", "repeated"]
Normalise = Callable[[OptionSpec, str, bool], str]  # (row, raw text, negated) → canonical text


def _code(words: tuple[str, ...]) -> str:
    return ", ".join(f"`{word}`" for word in words)


def _flag_value(flag: str, text: str) -> list[str]:
    return [flag, text]


@dataclass(frozen=True, slots=True)
class Kind:
    normalise: Normalise
    typed: Callable[[str], Any]  # canonical text → the value a setting holds
    describe: Callable[[OptionSpec], str]  # the docs' "values" column
    takes: Takes = "one"
    join: Callable[[list[str]], str] = ",".join  # a repeated flag's values as one text
    worker_args: Callable[[str, str], list[str]] = _flag_value  # (flag, text) → worker flags
    listed: bool = False  # a list of items: unset, none of them
    boolean: bool = False  # on or off, shown so in the docs
    metavar: Callable[[OptionSpec], str] = lambda spec: spec.kind.upper()  # its placeholder


def _number(parse: Callable[[str], float], what: str) -> Normalise:
    def normalise(spec: OptionSpec, raw: str, negated: bool) -> str:
        if raw in spec.literals:
            return raw
        try:
            number = parse(raw)
        except ValueError:
            raise ValueError(f"expected {what}, got '{raw}'") from None
        if not math.isfinite(number):
            raise ValueError(f"expected a finite number, got '{raw}'")
        check_bound(spec, number, raw)
        return str(number) if isinstance(number, int) else format_float(number)

    return normalise


def _described_number(word: str) -> Callable[[OptionSpec], str]:
    def describe(spec: OptionSpec) -> str:
        bound = {"any": "", "non_negative": " ≥ 0", "positive": " > 0"}[spec.bound]
        extra = f" or {_code(spec.literals)}" if spec.literals else ""
        return f"{word}{bound}{extra}"

    return describe


def _switch(spec: OptionSpec, raw: str, negated: bool) -> str:
    if raw.lower() in ("auto", "-1"):
        return "auto"
    return "on" if parse_bool(raw) else "off"


def _choice(spec: OptionSpec, raw: str, negated: bool) -> str:
    if raw.lower() not in spec.literals:
        raise ValueError(f"expected one of {', '.join(spec.literals)}, got '{raw}'")
    return raw.lower()


def _choices(spec: OptionSpec, raw: str, negated: bool) -> str:
    words = [word.strip().lower() for word in raw.split(",")]
    unknown = [word for word in words if word not in spec.literals]
    if unknown:
        raise ValueError(f"expected some of {', '.join(spec.literals)}, got '{unknown[0]}'")
    return ",".join(words)


def _pair(spec: OptionSpec, raw: str, negated: bool) -> str:
    items = [item for item in re.split(r"[,\s]+", raw.strip()) if item]
    if len(items) != 2 or not all(re.fullmatch(r"-?\d+", item) for item in items):
        raise ValueError(f"expected two integers, got '{raw}'")
    return ",".join(str(int(item)) for item in items)


def _items(text: str) -> tuple[str, ...]:
    return tuple(item for item in text.split(",") if item)


def _scaled(text: str) -> tuple[tuple[str, float], ...]:
    pairs = (item.rpartition(":") for item in _items(text))
    return tuple((path, float(scale)) for path, _, scale in pairs)


def _two_ints(text: str) -> tuple[int, int]:
    first, _, last = text.partition(",")
    return int(first), int(last)


def _fixed(text: str) -> Callable[[OptionSpec], str]:
    return lambda spec: text


KINDS: dict[OptionKind, Kind] = {
    "int": Kind(_number(int, "an integer"), int, _described_number("integer")),
    "float": Kind(_number(float, "a number"), float, _described_number("number")),
    "str": Kind(lambda spec, raw, negated: raw, str, _described_number("text")),
    "bool": Kind(
        lambda spec, raw, negated: "true" if parse_bool(raw) != negated else "false",
        lambda text: text == "true",
        _fixed("on/off"),
        takes="switch",
        boolean=True,
    ),
    "on-off": Kind(
        lambda spec, raw, negated: "on" if parse_bool(raw) != negated else "off",
        lambda text: text == "on",
        _fixed("`on`, `off`"),
        boolean=True,
        metavar=_fixed("on|off"),
    ),
    "switch": Kind(_switch, str, _fixed("`on`, `off`, `auto`")),
    "choice": Kind(
        _choice,
        str,
        lambda spec: _code(spec.literals),
        metavar=lambda spec: "|".join(spec.literals),
    ),
    "choices": Kind(
        _choices,
        _items,
        lambda spec: "comma-separated list of " + _code(spec.literals),
        listed=True,
    ),
    "size": Kind(
        lambda spec, raw, negated: str(parse_size(raw)), int, _fixed("size (`512M`, `8G`)")
    ),
    "list": Kind(
        lambda spec, raw, negated: ",".join(list_items(raw)),
        _items,
        _fixed("files, comma-separated"),
        takes="repeated",
        listed=True,
        metavar=_fixed("FILE"),
    ),
    "strings": Kind(
        lambda spec, raw, negated: json.dumps(string_items(raw)),
        lambda text: tuple(string_items(text)),
        _fixed("text, repeatable (in a preset: one, or a JSON array of them)"),
        takes="repeated",
        join=json.dumps,  # each value one string, whatever it holds
        # One flag per string, so that each stays whole.
        worker_args=lambda flag, text: [arg for item in string_items(text) for arg in (flag, item)],
        listed=True,
        metavar=_fixed("FILE"),
    ),
    "scaled-list": Kind(
        lambda spec, raw, negated: ",".join(scaled_item(item) for item in list_items(raw)),
        _scaled,
        _fixed("`FILE:SCALE` items, comma-separated"),
        takes="repeated",
        listed=True,
        metavar=_fixed("FILE:SCALE"),
    ),
    "numbers": Kind(
        lambda spec, raw, negated: ",".join(
            number_item(item) for item in re.split(r"[,/]+", raw.strip())
        ),
        lambda text: tuple(float(item) for item in _items(text)),
        _fixed("numbers ≥ 0, comma-separated"),
        listed=True,
        metavar=_fixed("N0,N1,..."),
    ),
    "pair": Kind(
        _pair,
        _two_ints,
        _fixed("two integers"),
        takes="two",
        worker_args=lambda flag, text: [flag, *text.split(",")],
    ),
}


def normalise_value(spec: OptionSpec, raw: str, *, negated: bool) -> str:
    """The canonical text of a value; ``ValueError`` says what was expected."""
    return KINDS[spec.kind].normalise(spec, raw, negated)


def typed_value(spec: OptionSpec, text: str) -> Any:
    """An option's canonical text as the value a setting holds: ``"2048"`` → 2048, ``"true"`` →
    True, a list → a tuple of its items, a pair → two integers."""
    return KINDS[spec.kind].typed(text)
