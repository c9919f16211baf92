"""Repository ids, model references (``org/repo[:TAG]``) and quant tags, as llama.cpp reads them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath

__all__ = [
    "DEFAULT_TAGS",
    "InvalidReference",
    "canonical_tag",
    "choose_tag",
    "is_safe_repo_path",
    "is_valid_repo_id",
    "parse_reference",
    "quant_bits",
    "quant_tag",
]

DEFAULT_TAGS = ("Q4_K_M", "Q8_0")  # upstream's choice when a reference names no tag
_REPO_ID = re.compile(r"[A-Za-z0-9_]+(?:[/.-][A-Za-z0-9_]+)*")
_TRAILING_TOKEN = re.compile(r"[-.]([A-Za-z0-9_]+)$")
# Upstream takes any trailing token as the tag; Corral lists only names ending in something that
# looks like a ggml quantisation, so "gemma-3-1b-it.gguf" is not listed as "…:IT".
_QUANT_TAG = re.compile(r"(?:I?Q|TQ|B?F|MXFP|NVFP|FP)\d+(?:_[A-Z0-9]+)*", re.IGNORECASE)
_REFERENCE_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


class InvalidReference(ValueError):
    """A model reference that is not ``org/repo[:TAG]``."""


def is_valid_repo_id(repo_id: str) -> bool:
    """``org/repo`` made of ``[A-Za-z0-9_]`` runs joined by single ``/ . -`` (one ``/``)."""
    return (
        len(repo_id) <= 256 and _REPO_ID.fullmatch(repo_id) is not None and repo_id.count("/") == 1
    )


def canonical_tag(tag: str) -> str:
    """``q8_0`` → ``Q8_0``; ``UD-Q4_K_XL`` → ``Q4_K_XL`` (upstream's ``canonical_tag``)."""
    match = _TRAILING_TOKEN.search(tag)
    return (match.group(1) if match else tag).upper()


def quant_tag(stem: str) -> str | None:
    """The upper-case quant tag a file stem ends in (``model-q8_0`` → ``Q8_0``), if any."""
    token = _TRAILING_TOKEN.search(stem)
    return token.group(1).upper() if token and _QUANT_TAG.fullmatch(token.group(1)) else None


def quant_bits(tag: str | None) -> int:
    """The first number of a quant tag (Q4_K_M → 4, BF16 → 16); 0 when there is none."""
    digits = re.search(r"\d+", tag or "")
    return int(digits.group()) if digits else 0


def parse_reference(reference: str) -> tuple[str, str | None]:
    """``"org/repo:q8_0"`` → ``("org/repo", "Q8_0")``; ``"org/repo"`` → ``("org/repo", None)``."""
    repo, colon, tag = reference.strip().partition(":")
    if not is_valid_repo_id(repo):
        raise InvalidReference(
            f"invalid model '{reference}': expected <user>/<model>[:quant], e.g. "
            "ggml-org/gemma-3-1b-it-GGUF:Q4_K_M"
        )
    if colon and _REFERENCE_TAG.fullmatch(tag) is None:
        raise InvalidReference(f"invalid model '{reference}': '{tag}' is not a quant tag")
    return repo, canonical_tag(tag) if colon else None


def choose_tag(available: Iterable[str], requested: str | None) -> str | None:
    """The requested tag if available; without one Q4_K_M, then Q8_0, then the first."""
    tags = list(available)
    if requested is not None:
        return requested if requested in tags else None
    for default in DEFAULT_TAGS:
        if default in tags:
            return default
    return tags[0] if tags else None


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
