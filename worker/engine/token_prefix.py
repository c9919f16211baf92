"""How much two token sequences share from their start: what a KV cache can keep."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["common_prefix"]


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """The number of leading tokens ``a`` and ``b`` have in common."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
