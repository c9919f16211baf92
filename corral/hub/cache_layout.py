"""huggingface_hub's cache layout for one repository, written the way that library writes it.

``models--{org}--{repo}/blobs/<etag>`` holds the bytes, ``snapshots/<commit>/<path>`` are
relative symlinks into ``blobs/``, ``refs/main`` names the commit, and
``.locks/models--{org}--{repo}/<etag>.lock`` serialises writers of one blob (huggingface_hub
takes the same lock with ``filelock``, which is ``flock`` on Linux, so the two never write one
blob at once). Corral's own partial file is ``blobs/<etag>.incomplete``: a stable name, so an
interrupted download resumes from it (huggingface_hub 2.x uses ``<etag>.<uuid>.incomplete`` and
deletes it on failure).

Every name that comes from the hub (etag, commit, file path) is validated before it becomes a
path, so a hostile hub cannot write outside the repository's folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from corral.hub.names import is_safe_repo_path, is_valid_repo_id

__all__ = [
    "CACHE_DIR_VARIABLES",
    "PARTIAL_SUFFIX",
    "RepoLayout",
    "UnsafeName",
    "current_snapshot",
    "is_blob_name",
    "is_commit",
    "locate_cache_dir",
    "repo_folder_name",
    "repo_id_of_folder",
]

PARTIAL_SUFFIX = ".incomplete"
_REPO_FOLDER_PREFIX = "models--"
_BLOB_NAME = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# huggingface_hub writes commits in lower case; the listing reads what it, llama.cpp or a user
# copying folders may have written, so both sides accept either case.
_COMMIT = re.compile(r"[0-9a-fA-F]{40}")
# Upstream's precedence (common/hf-cache.cpp): variable, then the sub-path appended to it.
CACHE_DIR_VARIABLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("LLAMA_CACHE", ()),
    ("HF_HUB_CACHE", ()),
    ("HUGGINGFACE_HUB_CACHE", ()),
    ("HF_HOME", ("hub",)),
    ("XDG_CACHE_HOME", ("huggingface", "hub")),
    ("HOME", (".cache", "huggingface", "hub")),
)


class UnsafeName(ValueError):
    """A name from the hub that cannot safely become a path."""


def is_blob_name(name: str) -> bool:
    """A git sha1 or sha256 etag, the only names Corral gives blobs."""
    return _BLOB_NAME.fullmatch(name) is not None


def is_commit(name: str) -> bool:
    return _COMMIT.fullmatch(name) is not None


def repo_folder_name(repo: str) -> str:
    return _REPO_FOLDER_PREFIX + repo.replace("/", "--")


def repo_id_of_folder(folder_name: str) -> str | None:
    """``models--org--repo`` → ``org/repo``; None for any other folder."""
    if not folder_name.startswith(_REPO_FOLDER_PREFIX):
        return None
    repo_id = folder_name.removeprefix(_REPO_FOLDER_PREFIX).replace("--", "/")
    return repo_id if is_valid_repo_id(repo_id) else None


def locate_cache_dir(env: Mapping[str, str]) -> Path:
    """The hub cache directory: the first set variable of llama.cpp's list wins."""
    for variable, subpath in CACHE_DIR_VARIABLES:
        value = env.get(variable, "")
        if value:
            return Path(value, *subpath)
    return Path.home().joinpath(".cache", "huggingface", "hub")


def current_snapshot(repo_dir: Path) -> Path | None:
    """``refs/main``'s snapshot; without one, the most recently written snapshot."""
    snapshots = repo_dir / "snapshots"
    try:
        commit = (repo_dir / "refs" / "main").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        commit = ""
    # The ref's text becomes a path component, so only a real commit hash is trusted.
    if is_commit(commit) and (snapshots / commit).is_dir():
        return snapshots / commit
    try:
        candidates = [p for p in snapshots.iterdir() if p.is_dir() and is_commit(p.name)]
    except OSError:
        return None
    if not candidates:
        return None
    return max(candidates, key=lambda p: (p.stat().st_mtime, p.name))


@dataclass(frozen=True, slots=True)
class RepoLayout:
    cache_dir: Path
    repo: str  # "org/repo", already validated

    @property
    def repo_dir(self) -> Path:
        return self.cache_dir / repo_folder_name(self.repo)

    @property
    def blobs_dir(self) -> Path:
        return self.repo_dir / "blobs"

    @property
    def snapshots_dir(self) -> Path:
        return self.repo_dir / "snapshots"

    def blob(self, etag: str) -> Path:
        if not is_blob_name(etag):
            raise UnsafeName(f"unexpected etag from the hub: {etag!r}")
        return self.blobs_dir / etag

    def partial(self, etag: str) -> Path:
        return self.blob(etag).with_name(etag + PARTIAL_SUFFIX)

    def lock_file(self, etag: str) -> Path:
        self.blob(etag)  # validates the name
        return self.cache_dir / ".locks" / repo_folder_name(self.repo) / f"{etag}.lock"

    def snapshot(self, commit: str) -> Path:
        if not is_commit(commit):
            raise UnsafeName(f"unexpected commit from the hub: {commit!r}")
        return self.snapshots_dir / commit

    def snapshot_file(self, commit: str, path: str) -> Path:
        if not is_safe_repo_path(path):
            raise UnsafeName(f"unexpected file path from the hub: {path!r}")
        return self.snapshot(commit).joinpath(*PurePosixPath(path).parts)

    @contextlib.contextmanager
    def locked(self, etag: str) -> Iterator[None]:
        """Hold the blob's writer lock; waits while another process writes the same blob."""
        lock = self.lock_file(etag)
        lock.parent.mkdir(parents=True, exist_ok=True)
        with open(lock, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def current_commit(self) -> str | None:
        try:
            commit = (self.repo_dir / "refs" / "main").read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return None
        return commit if is_commit(commit) else None

    def write_ref(self, commit: str) -> None:
        """Point ``refs/main`` at ``commit``, atomically (a reader never sees half a hash)."""
        self.snapshot(commit)  # validates the name
        ref = self.repo_dir / "refs" / "main"
        ref.parent.mkdir(parents=True, exist_ok=True)
        temporary = ref.with_name(f".main.{os.getpid()}.tmp")
        temporary.write_text(commit, encoding="utf-8")
        os.replace(temporary, ref)

    def link(self, commit: str, path: str, etag: str) -> Path:
        """``snapshots/<commit>/<path>`` → ``../../blobs/<etag>`` (relative, as huggingface_hub)."""
        link = self.snapshot_file(commit, path)
        link.parent.mkdir(parents=True, exist_ok=True)
        target = os.path.relpath(self.blob(etag), link.parent)
        with contextlib.suppress(OSError):
            if os.readlink(link) == target:
                return link
        # Through a temporary name, so an existing link is replaced atomically.
        temporary = link.with_name(f".{link.name}.{os.getpid()}.tmp")
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        os.symlink(target, temporary)
        os.replace(temporary, link)
        return link

    def carry_over(self, old_commit: str, new_commit: str, blobs: Mapping[str, str]) -> None:
        """Link into the new snapshot every file of the old one that did not change upstream.

        ``refs/main`` decides which snapshot the cache listing reads; without this, fetching one
        tag after the repository got a new commit would hide every tag fetched before it.
        ``blobs`` maps each file of the new commit to its blob name.
        """
        if old_commit == new_commit:
            return
        old = self.snapshot(old_commit)
        for directory, _, files in os.walk(old):  # no followlinks: stays inside the snapshot
            for name in files:
                path = Path(directory, name).relative_to(old).as_posix()
                etag = blobs.get(path)
                if etag is None or not is_blob_name(etag) or not self.blob(etag).is_file():
                    continue
                if not os.path.lexists(self.snapshot_file(new_commit, path)):
                    self.link(new_commit, path, etag)
