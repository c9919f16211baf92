"""Which multimodal projector (``mmproj``) a model uses, by upstream's ``find_best_sibling``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath

from corral.hub.names import quant_bits
from corral.hub.shards import split_gguf_name

__all__ = ["best_mmproj", "is_mmproj"]


def is_mmproj(file_name: str) -> bool:
    return file_name.endswith(".gguf") and "mmproj" in file_name.lower()


def best_mmproj(
    model: PurePosixPath, tag: str | None, paths: Iterable[PurePosixPath]
) -> PurePosixPath | None:
    """An mmproj in the model's directory or above it, the deepest first, then the one whose
    quantisation is closest to the model's, then the first by name."""
    best: tuple[int, int, str] | None = None
    chosen: PurePosixPath | None = None
    for path in paths:
        if not is_mmproj(path.name):
            continue
        if path.parent != model.parent and path.parent not in model.parent.parents:
            continue
        distance = abs(quant_bits(split_gguf_name(path.name)[2]) - quant_bits(tag))
        rank = (-len(path.parent.parts), distance, path.as_posix())
        if best is None or rank < best:
            best, chosen = rank, path
    return chosen
