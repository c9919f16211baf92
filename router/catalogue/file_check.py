"""Checking a model's files before a worker is started for it (issue 17), and for listings.

A truncated download or a corrupt file otherwise fails inside llama.cpp with "failed to load
model", which names neither the file's problem nor its size; the header says both, in
milliseconds. Every file a model loads is checked: each shard of a split model (each has its
own header), its projector and its draft model. ``GET /models`` lists a model with what is
wrong with its files, and the pool refuses to start it (docs/api.md, docs/security.md).

Walking a header reads every vocabulary entry (tens of milliseconds for a 50k-token model, on
the path of every load), so a file's verdict is kept for as long as the file is the same: its
device, inode, size and modification time. A download that grows or replaces it changes them.
"""

from __future__ import annotations

import functools
import stat
from collections.abc import Iterable
from pathlib import Path

from corral.hub.gguf_header import gguf_file_problem
from corral.hub.shards import shard_paths
from router.catalogue.catalogue import CatalogueEntry

__all__ = ["entry_problem", "model_file_problem"]

_FileIdentity = tuple[int, int, int, int]  # st_dev, st_ino, st_size, st_mtime_ns


@functools.lru_cache(maxsize=256)
def _problem(file: Path, identity: _FileIdentity) -> str | None:
    del identity  # only the cache's key: the same file, unchanged, has the same verdict
    return gguf_file_problem(file)


def _files_problem(main: Path, files: Iterable[Path]) -> str | None:
    """The first problem of ``files``, named by the file unless it is ``main``.

    A missing file is left to the worker, which reports it as it always has.
    """
    for file in files:
        try:
            info = file.stat()
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode):
            continue
        identity = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
        problem = _problem(file, identity)
        if problem is not None:
            return problem if file == main else f"{file.name}: {problem}"
    return None


def model_file_problem(path: Path) -> str | None:
    """What is wrong with the model at ``path`` (its first shard, then the others), or ``None``."""
    return _files_problem(path, shard_paths(path))


def entry_problem(entry: CatalogueEntry) -> str | None:
    """What is wrong with any file the model loads (shards, projector, draft model), or
    ``None``: ``mmproj-x.gguf: corrupt header: …`` for its projector."""
    return _files_problem(entry.path, entry.files())
