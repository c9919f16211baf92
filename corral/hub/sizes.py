"""Sizes of cached models on disk, and the way Corral prints sizes."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from corral.hub.cache_scan import CachedModel, scan_cache
from corral.hub.shards import shard_paths

__all__ = ["CachedModelSize", "cached_model_sizes", "files_size", "human_size"]


def human_size(size: float) -> str:
    """``312800`` → ``312.8 KB`` (decimal units, as the hub shows sizes)."""
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} TB"


@dataclass(frozen=True, slots=True)
class CachedModelSize:
    model: CachedModel
    files: list[Path]  # the shards, then the projector
    size: int  # bytes on disk, following the snapshot links


def cached_model_sizes(cache_dir: Path) -> list[CachedModelSize]:
    """Every model the cache listing shows, with the size of its files."""
    sizes: list[CachedModelSize] = []
    for model in scan_cache(cache_dir):
        files = [*shard_paths(model.path), *([model.mmproj] if model.mmproj is not None else [])]
        sizes.append(CachedModelSize(model, files, files_size(files)))
    return sizes


def files_size(files: Iterable[Path]) -> int:
    """The bytes of these files; one that is missing counts for nothing."""
    total = 0
    for file in files:
        with contextlib.suppress(OSError):
            total += file.stat().st_size
    return total
