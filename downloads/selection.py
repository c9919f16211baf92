"""Which files of a repository make up one model, by the rules the cache listing uses.

A download must fetch exactly what :mod:`router.hub_cache` will later list as ``org/repo:TAG``,
and a removal must delete exactly that, so both sides share these rules: a model is a ``.gguf``
whose name ends in a quant tag, is not a companion file (mmproj, draft, …) and is the first
shard of its split; its projector is the nearest ``mmproj`` with the closest quantisation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath

from router.hub_cache import canonical_tag, is_valid_repo_id, quant_bits, split_gguf_name

__all__ = [
    "DEFAULT_TAGS",
    "InvalidReference",
    "best_mmproj",
    "choose_tag",
    "first_shards",
    "is_companion",
    "is_safe_repo_path",
    "parse_reference",
    "shards_of",
    "tag_of_model_file",
]

# Same list as router.hub_cache: files that go with a model but are not one.
_COMPANION_MARKERS = ("mmproj", "imatrix", "draft", "mtp-", "eagle3-", "dflash-", "dspark-")
DEFAULT_TAGS = ("Q4_K_M", "Q8_0")  # upstream's choice when a reference names no tag
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
_SPLIT = re.compile(r"^(?P<prefix>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)


class InvalidReference(ValueError):
    """A model reference that is not ``org/repo[:TAG]``."""


def parse_reference(reference: str) -> tuple[str, str | None]:
    """``"org/repo:q8_0"`` → ``("org/repo", "Q8_0")``; ``"org/repo"`` → ``("org/repo", None)``."""
    repo, colon, tag = reference.strip().partition(":")
    if not is_valid_repo_id(repo):
        raise InvalidReference(
            f"invalid model '{reference}': expected <user>/<model>[:quant], e.g. "
            "ggml-org/gemma-3-1b-it-GGUF:Q4_K_M"
        )
    if colon and _TAG.fullmatch(tag) is None:
        raise InvalidReference(f"invalid model '{reference}': '{tag}' is not a quant tag")
    return repo, canonical_tag(tag) if colon else None


def is_safe_repo_path(path: str) -> bool:
    """A hub file path that can become a path under a snapshot: relative, no ``..``."""
    pure = PurePosixPath(path)
    return (
        bool(path)
        and not pure.is_absolute()
        and "\\" not in path
        and "\x00" not in path
        and all(part not in ("", ".", "..") for part in path.split("/"))
    )


def is_companion(file_name: str) -> bool:
    lowered = file_name.lower()
    return any(marker in lowered for marker in _COMPANION_MARKERS)


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
        if tag is not None and split_gguf_name(path.name)[1] == 1:
            models.setdefault(tag, path)
    return models


def choose_tag(available: Iterable[str], requested: str | None) -> str | None:
    """The requested tag if available; without one Q4_K_M, then Q8_0, then the first."""
    tags = list(available)
    if requested is not None:
        return requested if requested in tags else None
    for default in DEFAULT_TAGS:
        if default in tags:
            return default
    return tags[0] if tags else None


def shards_of(first: PurePosixPath) -> list[PurePosixPath]:
    """Every shard of a split model (``-00001-of-00003`` → three paths), else just the file."""
    split = _SPLIT.match(first.name)
    if split is None:
        return [first]
    count = int(split["count"])
    return [
        first.with_name(f"{split['prefix']}-{index:05d}-of-{count:05d}.gguf")
        for index in range(1, count + 1)
    ]


def best_mmproj(
    model: PurePosixPath, tag: str, paths: Iterable[PurePosixPath]
) -> PurePosixPath | None:
    """Upstream's ``find_best_sibling``, as the cache listing applies it: an mmproj in the
    model's directory or above, the deepest first, then the closest quantisation."""
    best: tuple[int, int, str] | None = None
    chosen: PurePosixPath | None = None
    for path in paths:
        if path.suffix != ".gguf" or "mmproj" not in path.name.lower():
            continue
        if path.parent != model.parent and path.parent not in model.parent.parents:
            continue
        distance = abs(quant_bits(split_gguf_name(path.name)[2]) - quant_bits(tag))
        rank = (-len(path.parent.parts), distance, path.as_posix())
        if best is None or rank < best:
            best, chosen = rank, path
    return chosen
