"""Checking a model's files before a worker is started for it (issue 17).

A truncated download or a corrupt file otherwise fails inside llama.cpp with "failed to load
model", which names neither the file's problem nor its size; the header says both, in
milliseconds. Every shard of a split model is checked: each has its own header.

Walking a header reads every vocabulary entry (tens of milliseconds for a 50k-token model, on
the path of every load), so a file's verdict is kept for as long as the file is the same: its
device, inode, size and modification time. A download that grows or replaces it changes them.
"""

from __future__ import annotations

import functools
import stat
from pathlib import Path

from corral.hub.gguf_header import gguf_file_problem
from corral.hub.shards import shard_paths

__all__ = ["model_file_problem"]

_FileIdentity = tuple[int, int, int, int]  # st_dev, st_ino, st_size, st_mtime_ns


@functools.lru_cache(maxsize=256)
def _problem(file: Path, identity: _FileIdentity) -> str | None:
    del identity  # only the cache's key: the same file, unchanged, has the same verdict
    return gguf_file_problem(file)


def model_file_problem(path: Path) -> str | None:
    """What is wrong with the model at ``path`` (its first shard), or ``None``.

    A missing file is left to the worker, which reports it as it always has.
    """
    for file in shard_paths(path):
        try:
            info = file.stat()
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode):
            continue
        identity = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
        problem = _problem(file, identity)
        if problem is not None:
            return problem if file == path else f"{file.name}: {problem}"
    return None
