"""Walking a directory for ``file_glob_search`` and ``grep_search``, and their glob patterns.

As llama-server's walker: symlinked directories are never entered (a link can loop, or lead out
of the tools root), junk directories (``.git``, ``node_modules``, …) are listed but never
walked, and a walk stops at a time budget, saying so. Unlike llama-server, ``.gitignore`` is not
consulted (no ``git ls-files``): docs/tools.md. Globs become RE2 patterns, matched in time
linear in the path (Python's ``re`` takes hours over ``**a**a**a…``), and a ``[...]`` class
that is not one (``[z-a]``) is :class:`BadGlob`, the tool's ``{"error": …}``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Final, Literal

from router.tools.linear_regex import BadRegex, LinearRegex, escape

__all__ = ["BadGlob", "Entry", "GlobPattern", "Listing", "list_entries"]

Kind = Literal["file", "dir", "all"]

JUNK_DIRS: Final = frozenset(
    {".git", ".svn", ".hg", "node_modules", "__pycache__", ".venv", "venv", "dist", "build"}
    | {"target", ".cache", ".idea", ".vscode"}
)
LISTING_BUDGET_S: Final = 15.0


@dataclass(frozen=True, slots=True)
class Entry:
    rel: str  # '/'-separated, relative to the base
    is_dir: bool


@dataclass(slots=True)
class Listing:
    entries: list[Entry] = field(default_factory=list)
    truncated: bool = False  # the budget ran out or a directory could not be read


def list_entries(base: Path, max_depth: int, kind: Kind) -> Listing:
    """Entries under ``base``; ``max_depth`` 0 is unlimited, 1 the direct children only."""
    listing = Listing()
    deadline = time.monotonic() + LISTING_BUDGET_S
    stack: list[tuple[Path, str, int]] = [(base, "", 0)]
    while stack:
        directory, rel_dir, depth = stack.pop()
        try:
            children = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            listing.truncated = True
            continue
        for child in children:
            if time.monotonic() >= deadline:
                listing.truncated = True
                return listing
            rel = f"{rel_dir}{child.name}"
            if child.is_dir():
                if kind != "file":
                    listing.entries.append(Entry(rel, True))
                walkable = child.name.lower() not in JUNK_DIRS and not child.is_symlink()
                if walkable and (max_depth == 0 or depth + 1 < max_depth):
                    stack.append((Path(child.path), f"{rel}/", depth + 1))
            elif child.is_file() and kind != "dir":
                listing.entries.append(Entry(rel, False))
    return listing


class BadGlob(ValueError):
    """A glob whose ``[...]`` class is not one (``[z-a]``); the message names the pattern."""


def _glob_source(pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (close := pattern.find("]", i + 1)) > i:
            body = pattern[i + 1 : close]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = close + 1
            continue
        else:
            out.append(escape(char))
        i += 1
    return "".join(out)


@dataclass(frozen=True, slots=True)
class GlobPattern:
    """A glob as llama-server matches it: with no ``/`` it matches the base name at any depth;
    else the whole relative path, anchored with ``**/`` unless it already is (or starts with
    ``/``). Matched by RE2: ``**a**a**a…`` is linear in the path, not exponential."""

    _regex: LinearRegex
    _base_name_only: bool

    @classmethod
    def compile(cls, pattern: str) -> GlobPattern:
        whole = pattern
        if "/" in pattern:
            if pattern.startswith("/"):
                whole = pattern[1:]
            elif not (pattern == "**" or pattern.startswith("**/")):
                whole = "**/" + pattern
        try:
            regex = LinearRegex.compile(_glob_source(whole), dot_matches_newline=True)
        except BadRegex as exc:
            raise BadGlob(f'invalid glob pattern "{pattern}": {exc}') from None
        return cls(regex, "/" not in pattern)

    def matches(self, rel: str) -> bool:
        return self._regex.fullmatch(PurePosixPath(rel).name if self._base_name_only else rel)
