"""Checking a model's files before a worker is started for it (issue 17).

A truncated download or a corrupt file otherwise fails inside llama.cpp with "failed to load
model", which names neither the file's problem nor its size; the header says both, in
milliseconds. Every shard of a split model is checked: each has its own header.
"""

from __future__ import annotations

from pathlib import Path

from corral.hub.gguf_header import gguf_file_problem
from corral.hub.shards import shard_paths

__all__ = ["model_file_problem"]


def model_file_problem(path: Path) -> str | None:
    """What is wrong with the model at ``path`` (its first shard), or ``None``.

    A missing file is left to the worker, which reports it as it always has.
    """
    for file in shard_paths(path):
        if not file.is_file():
            continue
        problem = gguf_file_problem(file)
        if problem is not None:
            return problem if file == path else f"{file.name}: {problem}"
    return None
