"""Regular expressions a request sends (``grep_search`` patterns, globs), matched in linear time.

Python's ``re`` backtracks, and holds the GIL while it does: ``(.|.)*QQQ`` on a line of 40
characters runs for hours and stops the router's event loop with it (docs/security.md, Requests
that could stall the router). RE2 never backtracks, so a match costs time in proportion to the
text, and it lets go of the GIL while it matches. Its dialect has no backreferences and no
lookaround; a pattern using them (or any syntax error) is :class:`BadRegex`, which the tools
answer as their ``{"error": …}`` (docs/tools.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import re2

__all__ = ["BadRegex", "LinearRegex", "escape"]


class BadRegex(ValueError):
    """A pattern RE2 does not take; the message says why, as RE2 words it."""


def escape(text: str) -> str:
    """``text`` as a pattern matching itself."""
    return str(re2.escape(text))


@dataclass(frozen=True, slots=True)
class LinearRegex:
    _compiled: Any  # re2's pattern object (the package has no type hints)

    @classmethod
    def compile(
        cls, source: str, *, ignore_case: bool = False, dot_matches_newline: bool = False
    ) -> LinearRegex:
        options = re2.Options()
        options.log_errors = False  # a caller's typo is its answer, not a line in our stderr
        options.case_sensitive = not ignore_case
        options.dot_nl = dot_matches_newline
        try:
            compiled = re2.compile(source, options)
        except re2.error as exc:
            reason = exc.args[0] if exc.args else "invalid pattern"
            text = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
            raise BadRegex(text) from None
        finally:
            # re2 keeps the last 128 patterns compiled, each with up to 8 MiB of matching
            # state: callers' patterns must not stay in the router's memory once answered.
            re2.purge()
        return cls(compiled)

    def search(self, text: str | bytes) -> bool:
        """Whether the pattern matches anywhere in ``text`` (bytes are taken as UTF-8)."""
        return self._compiled.search(text) is not None

    def fullmatch(self, text: str) -> bool:
        """Whether the pattern matches the whole of ``text``."""
        return self._compiled.fullmatch(text) is not None
