"""Files that go with a model but cannot be loaded as one: projectors, importance matrices,
draft and multi-token-prediction heads.

The one list, used wherever a ``.gguf`` might be taken for a model: the hub cache listing,
``--models-dir``, downloads and removals. Upstream's markers plus ``draft`` and ``imatrix``.
"""

from __future__ import annotations

__all__ = ["COMPANION_MARKERS", "is_companion"]

COMPANION_MARKERS = ("mmproj", "imatrix", "draft", "mtp-", "eagle3-", "dflash-", "dspark-")


def is_companion(file_name: str) -> bool:
    """Whether a file name carries a companion marker, in any letter case."""
    lowered = file_name.lower()
    return any(marker in lowered for marker in COMPANION_MARKERS)
