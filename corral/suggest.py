"""Suggestions for a mistyped name: the closest known flags, keys and model ids (difflib)."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["closest", "did_you_mean"]


def closest(word: str, candidates: Iterable[str], *, limit: int = 3) -> list[str]:
    """Up to ``limit`` candidates close to ``word``, best first; case is ignored.

    difflib alone misses a short prefix of a long id (``smollm`` for
    ``SmolLM2-135M-Instruct.Q4_1`` scores 0.38), so names containing the word come first.
    """
    by_folded: dict[str, str] = {}
    for candidate in candidates:
        by_folded.setdefault(candidate.lower(), candidate)
    folded = word.lower()
    if not folded:
        return []
    containing = sorted((c for c in by_folded if folded in c), key=lambda c: (len(c), c))
    import difflib  # lazily: only a mistyped name needs it, and every worker imports this module

    similar = difflib.get_close_matches(folded, list(by_folded), n=limit, cutoff=0.6)
    ordered = [*containing, *(c for c in similar if c not in containing)]
    return [by_folded[c] for c in ordered[:limit]]


def did_you_mean(word: str, candidates: Iterable[str], *, limit: int = 1, quote: str = "'") -> str:
    """``"; did you mean 'x'?"`` (or ``'x' or 'y'``), or ``""`` when nothing is close."""
    found = closest(word, candidates, limit=limit)
    if not found:
        return ""
    return "; did you mean " + " or ".join(f"{quote}{name}{quote}" for name in found) + "?"
