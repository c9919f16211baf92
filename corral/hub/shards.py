"""Split models: ``name-00001-of-00003.gguf`` and its siblings, the one parser of shard names."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from corral.hub.names import quant_tag

__all__ = ["is_first_shard", "shard_paths", "shards_of", "split_gguf_name"]

_SPLIT_SUFFIX = re.compile(r"^(?P<prefix>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})$", re.IGNORECASE)


def split_gguf_name(file_name: str) -> tuple[str, int, str | None]:
    """``(prefix, shard index, quant tag or None)`` of a ``.gguf`` file name.

    ``model-Q4_K_M-00002-of-00003.gguf`` → ``("model-Q4_K_M", 2, "Q4_K_M")``.
    """
    prefix = file_name.removesuffix(".gguf")
    index = 1
    split = _SPLIT_SUFFIX.match(prefix)
    if split is not None:
        prefix, index = split["prefix"], int(split["index"])
    return prefix, index, quant_tag(prefix)


def is_first_shard(file_name: str) -> bool:
    """Whether the file names its model: a whole file, or the first shard of a split one."""
    return split_gguf_name(file_name)[1] == 1


def shards_of(first: PurePosixPath) -> list[PurePosixPath]:
    """Every shard of a split model (``-00001-of-00003`` → three paths), else just the file."""
    split = _SPLIT_SUFFIX.match(first.name.removesuffix(".gguf"))
    if split is None or not first.name.endswith(".gguf"):
        return [first]
    count = int(split["count"])
    return [
        first.with_name(f"{split['prefix']}-{index:05d}-of-{count:05d}.gguf")
        for index in range(1, count + 1)
    ]


def shard_paths(first: Path) -> list[Path]:
    """The files of the model whose first shard is ``first``, beside it (just ``first`` when the
    model is one file)."""
    return [first.with_name(shard.name) for shard in shards_of(PurePosixPath(first.name))]
