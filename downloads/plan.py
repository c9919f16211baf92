"""What one download fetches, asked of the hub with huggingface_hub (metadata only).

``model_info(files_metadata=True)`` lists the repository at ``main`` (commit, every file, LFS
sha256 and size); the tag is chosen from that list by the cache listing's own rules; then
``get_hf_file_metadata`` on each chosen file, pinned to that commit, gives the blob name (etag),
the size and where the bytes live (often a CDN).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

import httpx2
from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_url
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.hf_api import ModelInfo, RepoSibling

from corral.hub.cache_layout import is_blob_name, is_commit
from corral.hub.cache_scan import first_shards
from corral.hub.mmproj import best_mmproj
from corral.hub.names import choose_tag, is_safe_repo_path, parse_reference
from corral.hub.remote_preset import PRESET_FILE, PRESET_TAG
from corral.hub.shards import shards_of

__all__ = ["DownloadError", "DownloadPlan", "PlannedFile", "resolve_plan"]


class DownloadError(Exception):
    """A download that cannot be done; the message is what the user sees."""


@dataclass(frozen=True, slots=True)
class PlannedFile:
    path: str  # inside the repository, POSIX
    url: str  # the resolve URL at the commit: names the file in progress reports
    location: str  # where the bytes are fetched from (the hub or its CDN)
    etag: str  # the blob's name in the cache
    size: int
    sha256: str | None  # LFS files: the checksum the hub publishes
    git_sha1: str | None  # other files: their git blob id


@dataclass(frozen=True, slots=True)
class DownloadPlan:
    repo: str
    tag: str
    commit: str
    files: tuple[PlannedFile, ...]
    # Every file of the commit → its blob name, to carry unchanged files into a new snapshot.
    blobs: dict[str, str]

    @property
    def name(self) -> str:
        return f"{self.repo}:{self.tag}"


def _repo_info(api: HfApi, repo: str) -> ModelInfo:
    try:
        return api.model_info(repo, revision="main", files_metadata=True)
    except GatedRepoError:
        raise DownloadError(
            f"repository '{repo}' is gated: accept its terms on the hub and set HF_TOKEN "
            "(or --hf-token)"
        ) from None
    except RepositoryNotFoundError:
        raise DownloadError(
            f"repository '{repo}' not found on the hub (if it is private, set HF_TOKEN "
            "or --hf-token)"
        ) from None
    except RevisionNotFoundError:
        raise DownloadError(f"repository '{repo}' has no 'main' branch") from None


def _blob_id(sibling: RepoSibling) -> str | None:
    return sibling.lfs.sha256 if sibling.lfs is not None else sibling.blob_id


def _pick_files(repo: str, tag: str | None, paths: list[PurePosixPath]) -> tuple[str, list[str]]:
    """The tag and the files to fetch: every shard of its model, then its mmproj.

    A repository with a root ``preset.ini`` is a remote preset: that file alone, whatever the
    tag, as llama-server fetches it.
    """
    if PurePosixPath(PRESET_FILE) in paths:
        return PRESET_TAG, [PRESET_FILE]
    models = first_shards(paths)
    if not models:
        raise DownloadError(f"repository '{repo}' has no GGUF model whose name ends in a quant tag")
    chosen = choose_tag(models, tag)
    if chosen is None:
        raise DownloadError(
            f"repository '{repo}' has no GGUF model with tag {tag} "
            f"(available: {', '.join(sorted(models))})"
        )
    shards = shards_of(models[chosen])
    missing = [shard.as_posix() for shard in shards if shard not in paths]
    if missing:
        raise DownloadError(f"{repo}: split model is incomplete, missing {', '.join(missing)}")
    mmproj = best_mmproj(models[chosen], chosen, paths)
    files = [shard.as_posix() for shard in shards]
    return chosen, files + ([mmproj.as_posix()] if mmproj is not None else [])


def _planned_file(
    repo: str, commit: str, sibling: RepoSibling, *, token: str | None, endpoint: str | None
) -> PlannedFile:
    url = hf_hub_url(repo, sibling.rfilename, revision=commit, endpoint=endpoint)
    metadata = get_hf_file_metadata(url, token=token, endpoint=endpoint, retry_on_errors=True)
    etag = metadata.etag or ""
    if not is_blob_name(etag):
        raise DownloadError(f"{repo}/{sibling.rfilename}: the hub sent an unusable etag {etag!r}")
    size = metadata.size if metadata.size is not None else sibling.size
    if size is None:
        raise DownloadError(f"{repo}/{sibling.rfilename}: the hub did not say how large it is")
    return PlannedFile(
        path=sibling.rfilename,
        url=url,
        location=metadata.location,
        etag=etag,
        size=size,
        sha256=sibling.lfs.sha256 if sibling.lfs is not None else None,
        git_sha1=sibling.blob_id if sibling.lfs is None else None,
    )


def resolve_plan(reference: str, *, token: str | None, endpoint: str | None) -> DownloadPlan:
    """Raises :class:`DownloadError` (or :class:`~corral.hub.names.InvalidReference`)."""
    repo, tag = parse_reference(reference)
    where = endpoint or "the hub"
    try:
        info = _repo_info(HfApi(endpoint=endpoint, token=token), repo)
        commit = info.sha or ""
        if not is_commit(commit):
            raise DownloadError(f"{repo}: the hub sent an unusable commit {commit!r}")
        siblings = {s.rfilename: s for s in info.siblings or [] if is_safe_repo_path(s.rfilename)}
        chosen, names = _pick_files(repo, tag, [PurePosixPath(name) for name in siblings])
        files = tuple(
            _planned_file(repo, commit, siblings[name], token=token, endpoint=endpoint)
            for name in names
        )
    except OfflineModeIsEnabled:
        raise DownloadError("HF_HUB_OFFLINE is set: downloads are disabled") from None
    except HfHubHTTPError as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DownloadError(f"{repo}: the hub answered {first_line}") from None
    except (httpx2.TransportError, OSError) as exc:
        raise DownloadError(f"cannot reach {where}: {exc}") from None
    blobs = {name: blob for name, s in siblings.items() if (blob := _blob_id(s)) is not None}
    return DownloadPlan(repo=repo, tag=chosen, commit=commit, files=files, blobs=blobs)
