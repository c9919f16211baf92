"""Models in the Hugging Face hub cache, found and named as llama.cpp does (docs/protocol.md §2).

The cache is shared with llama.cpp and ``hf download``, so everything here is read-only: a
model is the path of a GGUF inside ``models--{org}--{repo}/snapshots/<commit>/``. Snapshot
files are symlinks into ``blobs/``; they are never resolved, because a split model's loader finds
its other shards by name next to the first one.

A model is a ``.gguf`` whose name ends in a quant tag, carries no companion marker and is the
first shard of its split; a download fetches exactly what this listing will show, and a removal
deletes exactly that, because all three go through :func:`first_shards`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from corral.hub.cache_layout import current_snapshot, repo_folder_name, repo_id_of_folder
from corral.hub.companions import is_companion
from corral.hub.mmproj import best_mmproj
from corral.hub.names import (
    DEFAULT_TAGS,
    InvalidReference,
    canonical_tag,
    is_safe_repo_path,
    parse_reference,
)
from corral.hub.shards import is_first_shard, split_gguf_name

__all__ = [
    "CachedModel",
    "cached_hub_file",
    "first_shards",
    "resolve_cached_model",
    "scan_cache",
    "snapshot_files",
    "tag_of_model_file",
]


@dataclass(frozen=True, slots=True)
class CachedModel:
    repo: str  # "org/repo"
    tag: str  # upper-case quant tag, e.g. "Q8_0"
    file: str  # path inside the snapshot, POSIX style, e.g. "sub/model-Q8_0.gguf"
    path: Path  # first shard, inside the snapshot (not resolved into blobs/)
    mmproj: Path | None = None

    @property
    def name(self) -> str:
        return f"{self.repo}:{self.tag}"


def tag_of_model_file(path: PurePosixPath) -> str | None:
    """The quant tag of a loadable GGUF (any shard), or None for anything else."""
    if path.suffix != ".gguf" or is_companion(path.name):
        return None
    return split_gguf_name(path.name)[2]


def first_shards(paths: Iterable[PurePosixPath]) -> dict[str, PurePosixPath]:
    """Tag → the file the cache listing names ``org/repo:TAG`` (the first in path order)."""
    models: dict[str, PurePosixPath] = {}
    for path in sorted(paths):
        tag = tag_of_model_file(path)
        if tag is not None and is_first_shard(path.name):
            models.setdefault(tag, path)
    return models


def snapshot_files(snapshot: Path, *, readable_only: bool = False) -> list[PurePosixPath]:
    """Every file under a snapshot, relative to it, in a stable order.

    ``readable_only`` skips dangling links (a blob deleted by hand): the listing must not offer
    them, while a removal must still see them to delete them.
    """
    found: list[PurePosixPath] = []
    # followlinks=False: a symlinked directory could lead anywhere; files are symlinks by design.
    for directory, _, files in os.walk(snapshot):
        for name in files:
            path = Path(directory, name)
            if not readable_only or path.is_file():  # is_file() follows the blob link
                found.append(PurePosixPath(path.relative_to(snapshot).as_posix()))
    return sorted(found)


def _scan_repo(repo_id: str, snapshot: Path) -> list[CachedModel]:
    ggufs = [f for f in snapshot_files(snapshot, readable_only=True) if f.suffix == ".gguf"]
    models: list[CachedModel] = []
    for tag, file in first_shards(ggufs).items():
        mmproj = best_mmproj(file, tag, ggufs)
        models.append(
            CachedModel(
                repo=repo_id,
                tag=tag,
                file=file.as_posix(),
                path=snapshot / file,
                mmproj=snapshot / mmproj if mmproj is not None else None,
            )
        )
    return models


def scan_cache(cache_dir: Path) -> list[CachedModel]:
    """Every cached model, sorted by name. A missing cache directory holds no models."""
    try:
        repo_dirs = sorted(cache_dir.iterdir())
    except OSError:
        return []
    models: list[CachedModel] = []
    for repo_dir in repo_dirs:
        repo_id = repo_id_of_folder(repo_dir.name)
        if repo_id is None or not repo_dir.is_dir():
            continue
        snapshot = current_snapshot(repo_dir)
        if snapshot is not None:
            models += _scan_repo(repo_id, snapshot)
    return sorted(models, key=lambda model: model.name)


def resolve_cached_model(
    models: Iterable[CachedModel], reference: str, hf_file: str | None = None
) -> CachedModel | None:
    """The cached model that ``org/repo[:TAG]`` (and optionally ``--hf-file``) names.

    Without a tag, upstream's choice: Q4_K_M, then Q8_0, then the first model of the repo.
    """
    repo, _, tag = reference.partition(":")
    candidates = [model for model in models if model.repo == repo]
    if hf_file is not None:
        wanted = PurePosixPath(hf_file).as_posix()
        return next((model for model in candidates if model.file == wanted), None)
    by_tag = {model.tag: model for model in candidates}
    if tag:
        return by_tag.get(canonical_tag(tag))
    for default in DEFAULT_TAGS:
        if default in by_tag:
            return by_tag[default]
    return candidates[0] if candidates else None


def cached_hub_file(cache: Path, reference: str, file: str) -> Path | None:
    """``--hf-file``: ``file`` of ``reference``'s repository (its tag aside) in the hub cache's
    current snapshot, or None when it is not there."""
    try:
        repo, _ = parse_reference(reference)
    except InvalidReference:
        return None
    if not is_safe_repo_path(file):
        return None
    snapshot = current_snapshot(cache / repo_folder_name(repo))
    path = snapshot / file if snapshot is not None else None
    return path if path is not None and path.is_file() else None
