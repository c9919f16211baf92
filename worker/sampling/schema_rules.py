"""The fixed pieces of llama.cpp's JSON Schema grammars: built-in rules, literals, repetition
and integer ranges, ported line by line from ``common/json-schema-to-grammar.cpp``."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

__all__ = [
    "INT_MAX",
    "PRIMITIVE_RULES",
    "SPACE_RULE",
    "STRING_FORMAT_RULES",
    "build_min_max_int",
    "build_repetition",
    "dump",
    "format_literal",
]

INT_MAX = 2**31 - 1  # C++'s std::numeric_limits<int>::max(): "no upper bound"
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1

SPACE_RULE = '| " " | "\\n"{1,2} [ \\t]{0,20}'

# name: (rule, the built-in rules it uses)
PRIMITIVE_RULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "boolean": ('("true" | "false")', ()),
    "decimal-part": ("[0-9]{1,16}", ()),
    "integral-part": ("[0] | [1-9] [0-9]{0,15}", ()),
    "number": (
        '("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)?',
        ("integral-part", "decimal-part"),
    ),
    "integer": ('("-"? integral-part)', ("integral-part",)),
    "value": (
        "object | array | string | number | boolean | null",
        ("object", "array", "string", "number", "boolean", "null"),
    ),
    "object": (
        '"{" space ( string ":" space value ("," space string ":" space value)* )? space "}"',
        ("string", "value"),
    ),
    "array": ('"[" space ( value ("," space value)* )? space "]"', ("value",)),
    "uuid": (
        '"\\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" '
        '[0-9a-fA-F]{12} "\\""',
        (),
    ),
    "char": ('[^"\\\\\\x7F\\x00-\\x1F] | [\\\\] (["\\\\bfnrt] | "u" [0-9a-fA-F]{4})', ()),
    "string": ('"\\"" char* "\\""', ("char",)),
    "null": ('"null"', ()),
}

STRING_FORMAT_RULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "date": (
        '[0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [1-2] [0-9] | "3" [0-1] )',
        (),
    ),
    "time": (
        '([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{3} )? '
        '( "Z" | ( "+" | "-" ) ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )',
        (),
    ),
    "date-time": ('date "T" time', ("date", "time")),
    "date-string": ('"\\"" date "\\""', ("date",)),
    "time-string": ('"\\"" time "\\""', ("time",)),
    "date-time-string": ('"\\"" date-time "\\""', ("date-time",)),
}

_LITERAL_ESCAPES = {"\r": "\\r", "\n": "\\n", '"': '\\"', "\\": "\\\\"}


def format_literal(literal: str) -> str:
    """``literal`` as a GBNF string literal."""
    return '"' + "".join(_LITERAL_ESCAPES.get(c, c) for c in literal) + '"'


def _dump_float(value: float) -> str:
    """nlohmann's double: shortest round trip, ".0" on whole numbers, exponent past 1e15."""
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "-0.0" if math.copysign(1, value) < 0 else "0.0"
    sign, digits_tuple, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digits_tuple))
    k, n = len(digits), len(digits_tuple) + exponent  # n: where the decimal point goes
    if k <= n <= 15:
        text = digits + "0" * (n - k) + ".0"
    elif 0 < n <= 15:
        text = digits[:n] + "." + digits[n:]
    elif -4 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        e = n - 1
        text = f"{mantissa}e{'-' if e < 0 else '+'}{abs(e):02d}"
    return ("-" if sign else "") + text


def dump(value: Any) -> str:
    """``value`` as nlohmann's compact dump writes it (keys in order, UTF-8 unescaped)."""
    if isinstance(value, float):
        return _dump_float(value)
    if isinstance(value, list):
        return "[" + ",".join(dump(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{dump(k)}:{dump(v)}" for k, v in value.items()) + "}"
    return json.dumps(value, ensure_ascii=False)


def build_repetition(item: str, min_items: int, max_items: int, separator: str = "") -> str:
    has_max = max_items != INT_MAX
    if max_items == 0:
        return ""
    if min_items == 0 and max_items == 1:
        return item + "?"
    if not separator:
        if min_items == 1 and not has_max:
            return item + "+"
        if min_items == 0 and not has_max:
            return item + "*"
        return f"{item}{{{min_items},{max_items if has_max else ''}}}"
    result = (
        item
        + " "
        + build_repetition(
            f"({separator} {item})",
            0 if min_items == 0 else min_items - 1,
            max_items - 1 if has_max else max_items,
        )
    )
    return f"({result})?" if min_items == 0 else result


def _digit_range(out: list[str], low: str, high: str) -> None:
    out.append(f"[{low}]" if low == high else f"[{low}-{high}]")


def _more_digits(out: list[str], min_digits: int, max_digits: int) -> None:
    out.append("[0-9]")
    if min_digits == max_digits == 1:
        return
    out.append("{" + str(min_digits))
    if max_digits != min_digits:
        out.append("," + (str(max_digits) if max_digits != INT_MAX else ""))
    out.append("}")


def _uniform_range(out: list[str], low: str, high: str) -> None:
    i = 0
    while i < len(low) and i < len(high) and low[i] == high[i]:
        i += 1
    if i > 0:
        out.append(f'"{low[:i]}"')
    if i >= len(low) or i >= len(high):
        return
    if i > 0:
        out.append(" ")
    sub_len = len(low) - i - 1
    if sub_len <= 0:
        out.append(f"[{low[i]}-{high[i]}]")
        return
    low_sub, high_sub = low[i + 1 :], high[i + 1 :]
    zeros, nines = "0" * sub_len, "9" * sub_len
    to_reached = False
    out.append("(")
    if low_sub == zeros:
        _digit_range(out, low[i], chr(ord(high[i]) - 1))
        out.append(" ")
        _more_digits(out, sub_len, sub_len)
    else:
        out.append(f"[{low[i]}] (")
        _uniform_range(out, low_sub, nines)
        out.append(")")
        if ord(low[i]) < ord(high[i]) - 1:
            out.append(" | ")
            if high_sub == nines:
                _digit_range(out, chr(ord(low[i]) + 1), high[i])
                to_reached = True
            else:
                _digit_range(out, chr(ord(low[i]) + 1), chr(ord(high[i]) - 1))
            out.append(" ")
            _more_digits(out, sub_len, sub_len)
    if not to_reached:
        out.append(" | ")
        _digit_range(out, high[i], high[i])
        out.append(" ")
        _uniform_range(out, zeros, high_sub)
    out.append(")")


def build_min_max_int(
    out: list[str],
    min_value: int,
    max_value: int,
    decimals_left: int = 16,
    top_level: bool = True,
) -> None:
    """Appends the GBNF of the integers in [min_value, max_value] (INT64_MIN / INT64_MAX:
    unbounded) to ``out``."""
    has_min, has_max = min_value != _INT64_MIN, max_value != _INT64_MAX
    if has_min and has_max:
        if min_value < 0 and max_value < 0:
            out.append('"-" (')
            build_min_max_int(out, -max_value, -min_value, decimals_left, True)
            out.append(")")
            return
        if min_value < 0:
            out.append('"-" (')
            build_min_max_int(out, 0, -min_value, decimals_left, True)
            out.append(") | ")
            min_value = 0
        min_s, max_s = str(min_value), str(max_value)
        for digits in range(len(min_s), len(max_s)):
            _uniform_range(out, min_s, "9" * digits)
            min_s = "1" + "0" * digits
            out.append(" | ")
        _uniform_range(out, min_s, max_s)
        return
    less_decimals = max(decimals_left - 1, 1)
    if has_min:
        if min_value < 0:
            out.append('"-" (')
            build_min_max_int(out, _INT64_MIN, -min_value, decimals_left, False)
            out.append(") | [0] | [1-9] ")
            _more_digits(out, 0, decimals_left - 1)
        elif min_value == 0:
            if top_level:
                out.append("[0] | [1-9] ")
                _more_digits(out, 0, less_decimals)
            else:
                _more_digits(out, 1, decimals_left)
        elif min_value <= 9:
            c = str(min_value)
            range_start = "1" if top_level else "0"
            if c > range_start:
                _digit_range(out, range_start, chr(ord(c) - 1))
                out.append(" ")
                _more_digits(out, 1, less_decimals)
                out.append(" | ")
            _digit_range(out, c, "9")
            out.append(" ")
            _more_digits(out, 0, less_decimals)
        else:
            min_s = str(min_value)
            c = min_s[0]
            if c > "1":
                _digit_range(out, "1" if top_level else "0", chr(ord(c) - 1))
                out.append(" ")
                _more_digits(out, len(min_s), less_decimals)
                out.append(" | ")
            _digit_range(out, c, c)
            out.append(" (")
            build_min_max_int(out, int(min_s[1:]), _INT64_MAX, less_decimals, False)
            out.append(")")
            if c < "9":
                out.append(" | ")
                _digit_range(out, chr(ord(c) + 1), "9")
                out.append(" ")
                _more_digits(out, len(min_s) - 1, less_decimals)
        return
    if has_max:
        if max_value >= 0:
            if top_level:
                out.append('"-" [1-9] ')
                _more_digits(out, 0, less_decimals)
                out.append(" | ")
            build_min_max_int(out, 0, max_value, decimals_left, True)
        else:
            out.append('"-" (')
            build_min_max_int(out, -max_value, _INT64_MAX, decimals_left, False)
            out.append(")")
        return
    raise ValueError("At least one of min_value or max_value must be set")
