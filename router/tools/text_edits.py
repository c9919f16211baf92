"""``edit_file``'s replacements, as llama-server applies them (tools/server/server-tools.cpp).

Each ``old_text`` must occur once and the edits must not overlap. When one is not found exactly,
the file is matched again with every line normalised (trailing blanks dropped, smart quotes,
dashes and odd spaces made ASCII), and the lines no edit touches are kept as they were.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Final

__all__ = ["EditRefused", "TextEdit", "apply_edits"]

_TRANSLATION: Final = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a", " "),
        **dict.fromkeys("\u202f\u205f\u3000", " "),
    }
)
_TRAILING_BLANKS: Final = re.compile(r"[ \t\r]+$")


class EditRefused(Exception):
    """The edits cannot be applied; the message is the tool's ``error``."""


@dataclass(frozen=True, slots=True)
class TextEdit:
    old_text: str
    new_text: str


@dataclass(frozen=True, slots=True)
class _Match:
    index: int  # which edit
    start: int
    length: int
    new_text: str


def _normalise(text: str) -> str:
    # Line by line, so the line count (and so each line's place) never changes.
    return "\n".join(
        _TRAILING_BLANKS.sub("", line).translate(_TRANSLATION) for line in text.split("\n")
    )


def _count(haystack: str, needle: str) -> int:
    return haystack.count(needle) if needle else 0


def _replace(content: str, matches: list[_Match], offset: int) -> str:
    for match in reversed(matches):
        local = match.start - offset
        content = content[:local] + match.new_text + content[local + match.length :]
    return content


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts += [i + 1 for i, char in enumerate(text) if char == "\n" and i + 1 < len(text)]
    return starts


def _line_of(starts: list[int], position: int) -> int:
    line = 0
    while line + 1 < len(starts) and starts[line + 1] <= position:
        line += 1
    return line


def _replace_keeping_lines(original: str, base: str, matches: list[_Match]) -> str:
    """Replacements made in the normalised ``base``; lines they do not touch come from
    ``original``, so normalising never rewrites the rest of the file."""
    original_lines = original.splitlines(keepends=True)
    starts = _line_starts(base)
    ends = [*starts[1:], len(base)]
    groups: list[tuple[int, int, list[_Match]]] = []
    for match in matches:
        first = _line_of(starts, match.start)
        last = _line_of(starts, max(match.start, match.start + match.length - 1)) + 1
        if groups and first < groups[-1][1]:
            start, end, members = groups[-1]
            groups[-1] = (start, max(end, last), [*members, match])
        else:
            groups.append((first, last, [match]))
    pieces: list[str] = []
    kept = 0
    for first, last, members in groups:
        pieces += original_lines[kept:first]
        pieces.append(_replace(base[starts[first] : ends[last - 1]], members, starts[first]))
        kept = last
    pieces += original_lines[kept:]
    return "".join(pieces)


def apply_edits(content: str, edits: list[TextEdit], path: str) -> str:
    fuzzy = False
    normalised = _normalise(content)
    for i, edit in enumerate(edits):
        if edit.old_text in content:
            continue
        if _normalise(edit.old_text) not in normalised:
            raise EditRefused(
                f"could not find edits[{i}].old_text in {path}, it must match the file's current "
                "content exactly"
            )
        fuzzy = True
    base = normalised if fuzzy else content
    matches: list[_Match] = []
    for i, edit in enumerate(edits):
        # Uniqueness is judged on normalised text: a duplicate differing in blanks still counts.
        occurrences = _count(normalised, _normalise(edit.old_text))
        if occurrences > 1:
            raise EditRefused(
                f"found {occurrences} occurrences of edits[{i}].old_text in {path}, "
                "it must be unique"
            )
        needle = _normalise(edit.old_text) if fuzzy else edit.old_text
        matches.append(_Match(i, base.find(needle), len(needle), edit.new_text))
    matches.sort(key=lambda m: m.start)
    for before, after in itertools.pairwise(matches):
        if before.start + before.length > after.start:
            raise EditRefused(
                f"edits[{before.index}] and edits[{after.index}] overlap in {path}; "
                "merge them into one edit or target disjoint regions"
            )
    result = _replace_keeping_lines(content, base, matches) if fuzzy else _replace(base, matches, 0)
    if result == content:
        raise EditRefused("no changes made: the replacement(s) produced identical content")
    return result
