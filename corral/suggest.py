"""Suggestions for a mistyped name: the closest known flags, keys and model ids.

Ranked by edit distance counting a swap of two neighbouring letters as one edit
(Damerau-Levenshtein, optimal string alignment), difflib's ratio breaking ties: difflib alone
scores ``--prot`` as close to ``--prio`` as to ``--port``, yet a transposition is the commonest
typo.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["closest", "did_you_mean", "edit_distance"]


def edit_distance(a: str, b: str) -> int:
    """Insertions, deletions, substitutions and swaps of two adjacent characters that turn
    ``a`` into ``b`` (the optimal string alignment distance)."""
    before: list[int] = []  # the row two above, for swaps
    above = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        row = [i]
        for j, other in enumerate(b, 1):
            cost = min(above[j] + 1, row[j - 1] + 1, above[j - 1] + (char != other))
            if i > 1 and j > 1 and char == b[j - 2] and a[i - 2] == other:
                cost = min(cost, before[j - 2] + 1)
            row.append(cost)
        before, above = above, row
    return above[-1]


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

    def ratio(candidate: str) -> float:
        return difflib.SequenceMatcher(None, folded, candidate).ratio()

    # Close: difflib's usual cutoff, or one edit from a word of four letters or more (a swap in
    # a short word scores below the cutoff; in a shorter one, one edit is most of the word).
    one_edit = len(folded) >= 4
    similar = [
        c for c in by_folded if ratio(c) >= 0.6 or (one_edit and edit_distance(folded, c) <= 1)
    ]
    similar.sort(key=lambda c: (edit_distance(folded, c), -ratio(c), c))
    ordered = [*containing, *(c for c in similar if c not in containing)]
    return [by_folded[c] for c in ordered[:limit]]


def did_you_mean(word: str, candidates: Iterable[str], *, limit: int = 1, quote: str = "'") -> str:
    """``"; did you mean 'x'?"`` (or ``'x' or 'y'``), or ``""`` when nothing is close."""
    found = closest(word, candidates, limit=limit)
    if not found:
        return ""
    return "; did you mean " + " or ".join(f"{quote}{name}{quote}" for name in found) + "?"
