"""Prompt-lookup drafts (``--spec-type ngram-simple``): no draft model, only the history.

As llama-server's ``common_ngram_simple_draft`` (common/ngram-map.cpp): the last ``size_n``
tokens (ending with the one just sampled) are looked up earlier in the sequence, latest match
first, and the tokens that followed that match are the draft. Text that repeats what came
before (code edits, quotes, summaries of the prompt) is drafted for free.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ngram_draft"]


def ngram_draft(history: Sequence[int], last: int, size_n: int, size_m: int) -> list[int]:
    """Up to ``size_m`` tokens that followed the latest earlier occurrence of the ``size_n``
    tokens ending with ``last``; empty when there is none (or too little history)."""
    length = len(history)
    if length <= size_n + size_m + 1:
        return []
    pattern = [*history[length - size_n + 1 :], last]
    # Newest first, skipping the occurrence that is the pattern itself; 0 means no match.
    end = size_n - 1
    for start in range(length - size_n - 1, 0, -1):
        # The cheap test first: most positions differ in their last token.
        if history[start + end] == last and list(history[start : start + size_n]) == pattern:
            break
    else:
        return []
    follow = min(size_m, length - (start + size_n))
    if follow < size_n:
        return []
    return list(history[start + size_n : start + size_n + follow])
