"""Removing one cached model, and sweeping stale partial files.

Removal (``DELETE /models``, ``corral rm``) deletes, in every snapshot of the repository, the
snapshot entries of that tag's model files (all shards), plus the projector it used when no other
tag of the same snapshot uses it; then the blobs those entries pointed to that nothing references
any more. Other tags, other repositories and blobs it did not point to are never touched, and
only paths inside ``<cache>/models--{org}--{repo}`` are ever deleted: folders that are symlinks
are refused, and a link whose target lies outside the repository's ``blobs/`` only loses the link.

Used by the router, so nothing here imports huggingface_hub.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from pathlib import Path, PurePosixPath

from corral.hub.cache_layout import PARTIAL_SUFFIX, is_blob_name, repo_folder_name
from corral.hub.cache_scan import first_shards, snapshot_files, tag_of_model_file
from corral.hub.mmproj import best_mmproj
from corral.hub.names import parse_reference

__all__ = [
    "STALE_PARTIAL_SECONDS",
    "NotInCache",
    "files_to_remove",
    "remove_cached_model",
    "sweep_stale_partials",
]

# A partial file nobody has written to for a day belongs to a download nobody is coming back to.
STALE_PARTIAL_SECONDS = 24 * 3600.0


class NotInCache(LookupError):
    """The cache holds no files of that model (or not in a place Corral may delete from)."""


def _real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _blob_of(link: Path, blobs_dir: Path) -> Path | None:
    """The blob a snapshot link points to, if it is one of this repository's blobs."""
    if not link.is_symlink():
        return None  # a copied file holds its own bytes
    target = Path(os.path.normpath(os.path.join(os.path.realpath(link.parent), os.readlink(link))))
    return target if target.parent == blobs_dir else None


def _doomed_files(tag: str, files: list[PurePosixPath]) -> list[PurePosixPath]:
    """That tag's model files, plus its projector unless another tag of the snapshot uses it."""
    ggufs = [file for file in files if file.suffix == ".gguf"]
    doomed = [file for file in ggufs if tag_of_model_file(file) == tag]
    models = first_shards(ggufs)
    if tag in models:
        projector = best_mmproj(models[tag], tag, ggufs)
        others = {best_mmproj(path, other, ggufs) for other, path in models.items() if other != tag}
        if projector is not None and projector not in others:
            doomed.append(projector)
    return doomed


def _remove_empty_dirs(top: Path) -> None:
    for directory, _, _ in sorted(os.walk(top), key=lambda entry: -len(entry[0])):
        with contextlib.suppress(OSError):  # not empty: kept
            os.rmdir(directory)


def _plan(cache_dir: Path, name: str) -> tuple[Path, list[Path], set[Path]]:
    """The repository's folder, the snapshot entries to unlink and the blobs that nothing
    references once they are gone; raises as :func:`remove_cached_model`."""
    repo, tag = parse_reference(name)
    if tag is None:
        raise NotInCache(f"'{name}' names no tag; remove one model at a time (org/repo:TAG)")
    root = Path(os.path.realpath(cache_dir))
    repo_dir = root / repo_folder_name(repo)
    snapshots_dir, blobs_dir = repo_dir / "snapshots", repo_dir / "blobs"
    if not _real_dir(repo_dir) or not _real_dir(snapshots_dir):
        raise NotInCache(f"'{name}' is not in the hub cache {cache_dir}")
    may_delete_blobs = _real_dir(blobs_dir)
    entries: list[Path] = []
    freed: set[Path] = set()
    for snapshot in sorted(snapshots_dir.iterdir()):
        if not _real_dir(snapshot):
            continue
        for file in _doomed_files(tag, snapshot_files(snapshot)):
            path = snapshot.joinpath(*file.parts)
            blob = _blob_of(path, blobs_dir)
            if blob is not None and may_delete_blobs:
                freed.add(blob)
            entries.append(path)
    if not entries:
        raise NotInCache(f"'{name}' is not in the hub cache {cache_dir}")
    doomed = set(entries)
    for snapshot in snapshots_dir.iterdir():
        for file in snapshot_files(snapshot) if _real_dir(snapshot) else []:
            path = snapshot.joinpath(*file.parts)
            if path not in doomed:
                freed.discard(_blob_of(path, blobs_dir) or Path())
    return repo_dir, entries, freed


def files_to_remove(cache_dir: Path, name: str) -> set[Path]:
    """The real paths of the files whose bytes :func:`remove_cached_model` would delete now: the
    blobs it frees, and snapshot entries that are copies rather than links. A model whose files
    resolve to one of them loses them (the router stops every such model first); raises as
    :func:`remove_cached_model`."""
    _, entries, freed = _plan(cache_dir, name)
    return freed | {path for path in entries if not path.is_symlink()}


def remove_cached_model(cache_dir: Path, name: str) -> list[Path]:
    """Delete ``org/repo:TAG``'s files (see the module docstring); returns what was deleted.

    Raises :class:`NotInCache` when there is nothing to delete, and
    :class:`~corral.hub.names.InvalidReference` for a malformed name.
    """
    repo_dir, entries, freed = _plan(cache_dir, name)
    removed: list[Path] = []
    for path in entries:
        path.unlink()
        removed.append(path)
    for snapshot in sorted((repo_dir / "snapshots").iterdir()):
        if _real_dir(snapshot):
            _remove_empty_dirs(snapshot)
    for blob in sorted(freed):
        with contextlib.suppress(FileNotFoundError):
            blob.unlink()
            removed.append(blob)
    _remove_repo_if_empty(repo_dir)
    return removed


def _remove_repo_if_empty(repo_dir: Path) -> None:
    """Drop the repository's folder once no snapshot and no blob (partials included) is left."""
    for sub in ("snapshots", "blobs"):
        with contextlib.suppress(FileNotFoundError):
            if any((repo_dir / sub).iterdir()):
                return
    shutil.rmtree(repo_dir, ignore_errors=True)


def _lock_is_held(lock: Path) -> bool:
    try:
        descriptor = os.open(lock, os.O_RDONLY)
    except OSError:
        return False  # no lock file: nobody can be holding it
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)  # also releases a lock we just took
    return False


def sweep_stale_partials(
    cache_dir: Path, *, max_age: float = STALE_PARTIAL_SECONDS, now: float | None = None
) -> list[Path]:
    """Delete ``models--*/blobs/*.incomplete`` files untouched for ``max_age`` seconds.

    Ours (``<etag>.incomplete``) and huggingface_hub's (``<etag>.<uuid>.incomplete``, never
    reused) alike; a partial whose blob lock someone holds is being written and is kept.
    """
    now = time.time() if now is None else now
    swept: list[Path] = []
    for partial in sorted(cache_dir.glob(f"models--*/blobs/*{PARTIAL_SUFFIX}")):
        try:
            if now - partial.lstat().st_mtime < max_age:
                continue
        except FileNotFoundError:
            continue
        etag = partial.name.split(".", 1)[0]
        lock = cache_dir / ".locks" / partial.parent.parent.name / f"{etag}.lock"
        if is_blob_name(etag) and _lock_is_held(lock):
            continue
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
            swept.append(partial)
    return swept
