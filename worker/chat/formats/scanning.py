"""Text scanning shared by the chat formats: markers that may still be arriving, JSON values.

A partial parse must not hand a client text that could turn out to be the start of a tool call
or a thinking tag, so content stops before any tail that is a proper prefix of such a marker.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "JsonValue",
    "MalformedToolCall",
    "arguments_object",
    "held_back",
    "json_value",
    "marked_segments",
    "may_open",
    "named_call_head",
]

_DECODER = json.JSONDecoder()


class MalformedToolCall(ValueError):
    """The model opened a tool call it did not write out correctly; its text becomes content."""


def arguments_object(text: str) -> dict[str, Any]:
    """A call's complete arguments, which must be one JSON object, else MalformedToolCall."""
    try:
        value = json.loads(text)
    except ValueError:
        raise MalformedToolCall("tool-call arguments are not JSON") from None
    if not isinstance(value, dict):
        raise MalformedToolCall("tool-call arguments must be a JSON object")
    return value


def held_back(text: str, markers: tuple[str, ...]) -> int:
    """Where ``text`` stops being safe to send: before a tail that may begin a marker."""
    for start in range(max(0, len(text) - max((len(m) for m in markers), default=0)), len(text)):
        tail = text[start:]
        if any(m.startswith(tail) and m != tail for m in markers):
            return start
    return len(text)


def marked_segments(text: str, marker: str, partial: bool) -> Iterator[tuple[str, bool]]:
    """``text`` split at ``marker``, each piece with whether it is still arriving (the last of a
    partial text, which loses a tail that may begin the marker)."""
    segments = text.split(marker)
    for index, segment in enumerate(segments):
        open_ = partial and index == len(segments) - 1
        yield (segment[: held_back(segment, (marker,))] if open_ else segment), open_


@dataclass(frozen=True, slots=True)
class JsonValue:
    value: Any
    end: int  # index just past the value


def json_value(text: str, pos: int) -> JsonValue | None:
    """The complete JSON value at ``pos`` (after whitespace), or None when it is not (yet) one."""
    while pos < len(text) and text[pos].isspace():
        pos += 1
    try:
        value, end = _DECODER.raw_decode(text, pos)
    except ValueError:
        return None
    return JsonValue(value, end)


def named_call_head(name_keys: tuple[str, ...], args_keys: tuple[str, ...]) -> re.Pattern[str]:
    """The opening of ``{"name": "f", "arguments": `` as models write it, name first.

    Matching it is what lets a call's argument text stream before the object is complete.
    """
    names = "|".join(re.escape(k) for k in name_keys)
    args = "|".join(re.escape(k) for k in args_keys)
    return re.compile(
        rf'\{{\s*"(?:{names})"\s*:\s*"(?P<name>(?:[^"\\]|\\.)*)"\s*,\s*"(?:{args})"\s*:\s*'
    )


def may_open(head: re.Pattern[str], rest: str) -> bool:
    """Whether ``rest`` could still grow into a match of ``head``: it agrees with the literal
    text the pattern starts with."""
    literal = re.match(r"(?:[^\\\[\](){}.*+?^$|]|\\[^A-Za-z0-9])*", head.pattern)
    prefix = re.sub(r"\\(.)", r"\1", literal.group(0)) if literal else ""
    return bool(prefix) and (prefix.startswith(rest) or rest.startswith(prefix))
