"""Hub cache folders laid out the way huggingface_hub leaves them, for tests of whatever reads
or edits the cache (the listing, the catalogue, removal, sizes)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["COMMIT", "COMMIT_A", "COMMIT_B", "REPO", "add_snapshot", "lay_out"]

COMMIT_A = "a" * 40
COMMIT_B = "b" * 40
REPO = "acme/tiny-GGUF"
COMMIT = "c" * 40


def add_snapshot(
    cache: Path, repo: str, files: list[str], *, commit: str = COMMIT_A, ref: str | None = "main"
) -> Path:
    """Lay out a repo the way huggingface_hub does: blobs, snapshot symlinks, refs/<ref>."""
    repo_dir = cache / ("models--" + repo.replace("/", "--"))
    snapshot = repo_dir / "snapshots" / commit
    for index, file in enumerate(files):
        blob = repo_dir / "blobs" / f"{commit[:8]}{index:032x}"
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(b"GGUF")
        link = snapshot / file
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    if ref is not None:
        (repo_dir / "refs").mkdir(parents=True, exist_ok=True)
        (repo_dir / "refs" / ref).write_text(commit)
    return snapshot


def lay_out(
    cache: Path, files: dict[str, bytes], *, repo: str = REPO, commit: str = COMMIT
) -> Path:
    """A repository as huggingface_hub leaves it; equal contents share one blob."""
    repo_dir = cache / ("models--" + repo.replace("/", "--"))
    snapshot = repo_dir / "snapshots" / commit
    for path, content in files.items():
        blob = repo_dir / "blobs" / hashlib.sha256(content).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(content)
        link = snapshot / path
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo_dir / "refs").mkdir(parents=True, exist_ok=True)
    (repo_dir / "refs" / "main").write_text(commit)
    return repo_dir
