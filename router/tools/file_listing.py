"""Walking a directory for ``file_glob_search`` and ``grep_search``, and their glob patterns.

As llama-server's walker: symlinked directories are never entered (a link can loop, or lead out
of the tools root), junk directories (``.git``, ``node_modules``, …) are listed but never
walked, and a walk stops at a time budget, saying so. Unlike llama-server, ``.gitignore`` is not
consulted (no ``git ls-files``): docs/tools.md.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Final, Literal

__all__ = ["Entry", "Listing", "list_entries", "path_glob_match"]

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


@lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern[str]:
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
            out.append(re.escape(char))
        i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def path_glob_match(pattern: str, rel: str) -> bool:
    """No ``/`` in the pattern: it matches the base name at any depth; else the whole relative
    path, anchored with ``**/`` unless it already is (or starts with ``/``)."""
    if "/" not in pattern:
        return _glob_regex(pattern).match(PurePosixPath(rel).name) is not None
    if pattern.startswith("/"):
        pattern = pattern[1:]
    elif not (pattern == "**" or pattern.startswith("**/")):
        pattern = "**/" + pattern
    return _glob_regex(pattern).match(rel) is not None
