"""Models in the Hugging Face hub cache, found and named the way llama.cpp does (SPEC §2).

The cache is shared with llama.cpp and ``hf download``, so everything here is read-only: a
model is the path of a GGUF inside ``models--{org}--{repo}/snapshots/<commit>/``. Snapshot
files are symlinks into ``blobs/``; they are never resolved, because a split model's loader finds
its other shards by name next to the first one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = [
    "CachedModel",
    "canonical_tag",
    "is_valid_repo_id",
    "locate_cache_dir",
    "quant_bits",
    "resolve_cached_model",
    "scan_cache",
    "split_gguf_name",
]

_REPO_FOLDER_PREFIX = "models--"
# Upstream's precedence (common/hf-cache.cpp): variable, then the sub-path appended to it.
_CACHE_DIR_VARIABLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("LLAMA_CACHE", ()),
    ("HF_HUB_CACHE", ()),
    ("HUGGINGFACE_HUB_CACHE", ()),
    ("HF_HOME", ("hub",)),
    ("XDG_CACHE_HOME", ("huggingface", "hub")),
    ("HOME", (".cache", "huggingface", "hub")),
)
# Files that accompany a model but cannot be loaded as one (upstream's list plus "draft").
_COMPANION_MARKERS = ("mmproj", "imatrix", "draft", "mtp-", "eagle3-", "dflash-", "dspark-")
_SPLIT_SUFFIX = re.compile(r"^(?P<prefix>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})$", re.IGNORECASE)
_TRAILING_TOKEN = re.compile(r"[-.]([A-Za-z0-9_]+)$")
# Upstream takes any trailing token as the tag; Corral lists only names ending in something that
# looks like a ggml quantisation, so "gemma-3-1b-it.gguf" is not listed as "…:IT".
_QUANT_TAG = re.compile(r"(?:I?Q|TQ|B?F|MXFP|NVFP|FP)\d+(?:_[A-Z0-9]+)*", re.IGNORECASE)
_REPO_ID = re.compile(r"[A-Za-z0-9_]+(?:[/.-][A-Za-z0-9_]+)*")
_COMMIT = re.compile(r"[0-9a-fA-F]{40}")
_DEFAULT_TAGS = ("Q4_K_M", "Q8_0")  # what upstream picks when a reference names no tag


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


def locate_cache_dir(env: Mapping[str, str]) -> Path:
    """The hub cache directory: the first set variable of llama.cpp's list wins."""
    for variable, subpath in _CACHE_DIR_VARIABLES:
        value = env.get(variable, "")
        if value:
            return Path(value, *subpath)
    return Path.home().joinpath(".cache", "huggingface", "hub")


def is_valid_repo_id(repo_id: str) -> bool:
    """``org/repo`` made of ``[A-Za-z0-9_]`` runs joined by single ``/ . -`` (one ``/``)."""
    return (
        len(repo_id) <= 256 and _REPO_ID.fullmatch(repo_id) is not None and repo_id.count("/") == 1
    )


def canonical_tag(tag: str) -> str:
    """``q8_0`` → ``Q8_0``; ``UD-Q4_K_XL`` → ``Q4_K_XL`` (upstream's ``canonical_tag``)."""
    match = _TRAILING_TOKEN.search(tag)
    return (match.group(1) if match else tag).upper()


def split_gguf_name(file_name: str) -> tuple[str, int, str | None]:
    """``(prefix, shard index, quant tag or None)`` of a ``.gguf`` file name.

    ``model-Q4_K_M-00002-of-00003.gguf`` → ``("model-Q4_K_M", 2, "Q4_K_M")``.
    """
    prefix = file_name.removesuffix(".gguf")
    index = 1
    split = _SPLIT_SUFFIX.match(prefix)
    if split is not None:
        prefix, index = split["prefix"], int(split["index"])
    token = _TRAILING_TOKEN.search(prefix)
    tag = token.group(1).upper() if token and _QUANT_TAG.fullmatch(token.group(1)) else None
    return prefix, index, tag


def quant_bits(tag: str | None) -> int:
    """The first number of a quant tag (Q4_K_M → 4, BF16 → 16); 0 when there is none."""
    digits = re.search(r"\d+", tag or "")
    return int(digits.group()) if digits else 0


def _is_companion(file_name: str) -> bool:
    lowered = file_name.lower()
    return any(marker in lowered for marker in _COMPANION_MARKERS)


def _repo_id_of_folder(folder_name: str) -> str | None:
    if not folder_name.startswith(_REPO_FOLDER_PREFIX):
        return None
    repo_id = folder_name.removeprefix(_REPO_FOLDER_PREFIX).replace("--", "/")
    return repo_id if is_valid_repo_id(repo_id) else None


def _current_snapshot(repo_dir: Path) -> Path | None:
    """``refs/main``'s snapshot; without one, the most recently written snapshot."""
    snapshots = repo_dir / "snapshots"
    try:
        commit = (repo_dir / "refs" / "main").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        commit = ""
    # The ref's text becomes a path component, so only a real commit hash is trusted.
    if _COMMIT.fullmatch(commit) and (snapshots / commit).is_dir():
        return snapshots / commit
    try:
        candidates = [p for p in snapshots.iterdir() if p.is_dir() and _COMMIT.fullmatch(p.name)]
    except OSError:
        return None
    if not candidates:
        return None
    return max(candidates, key=lambda p: (p.stat().st_mtime, p.name))


def _snapshot_ggufs(snapshot: Path) -> list[PurePosixPath]:
    """Every readable ``.gguf`` under the snapshot, relative to it, in a stable order."""
    found: list[PurePosixPath] = []
    # followlinks=False: a symlinked directory could lead anywhere; files are symlinks by design.
    for directory, _, files in os.walk(snapshot):
        for file_name in files:
            path = Path(directory, file_name)
            # is_file() follows the blob symlink, so a dangling one (blob deleted) is skipped.
            if file_name.endswith(".gguf") and path.is_file():
                found.append(PurePosixPath(path.relative_to(snapshot).as_posix()))
    return sorted(found)


def _best_mmproj(
    model: PurePosixPath, tag: str, siblings: list[PurePosixPath]
) -> PurePosixPath | None:
    """Upstream's ``find_best_sibling``: an mmproj in the model's directory or above it, the
    deepest first, then the one whose quantisation is closest to the model's."""
    best: tuple[int, int, str] | None = None
    chosen: PurePosixPath | None = None
    for sibling in siblings:
        if "mmproj" not in sibling.name.lower():
            continue
        if sibling.parent != model.parent and sibling.parent not in model.parent.parents:
            continue
        _, _, sibling_tag = split_gguf_name(sibling.name)
        distance = abs(quant_bits(sibling_tag) - quant_bits(tag))
        rank = (-len(sibling.parent.parts), distance, sibling.as_posix())
        if best is None or rank < best:
            best, chosen = rank, sibling
    return chosen


def _scan_repo(repo_id: str, snapshot: Path) -> list[CachedModel]:
    files = _snapshot_ggufs(snapshot)
    models: dict[str, CachedModel] = {}
    for file in files:
        if _is_companion(file.name):
            continue
        _, index, tag = split_gguf_name(file.name)
        if index != 1 or tag is None or tag in models:
            continue
        mmproj = _best_mmproj(file, tag, files)
        models[tag] = CachedModel(
            repo=repo_id,
            tag=tag,
            file=file.as_posix(),
            path=snapshot / file,
            mmproj=snapshot / mmproj if mmproj is not None else None,
        )
    return list(models.values())


def scan_cache(cache_dir: Path) -> list[CachedModel]:
    """Every cached model, sorted by name. A missing cache directory holds no models."""
    try:
        repo_dirs = sorted(cache_dir.iterdir())
    except OSError:
        return []
    models: list[CachedModel] = []
    for repo_dir in repo_dirs:
        repo_id = _repo_id_of_folder(repo_dir.name)
        if repo_id is None or not repo_dir.is_dir():
            continue
        snapshot = _current_snapshot(repo_dir)
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
    for default in _DEFAULT_TAGS:
        if default in by_tag:
            return by_tag[default]
    return candidates[0] if candidates else None
