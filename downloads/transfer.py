"""Fetching one blob: resumable across runs, verified against the hub's checksum.

The bytes go to ``blobs/<etag>.incomplete``, appended with unbuffered writes, so whatever is on
disk is always a prefix of the file, however the process ends (cancel, crash, SIGKILL). The next
run re-hashes that prefix and asks for the rest with ``Range: bytes=N-``. Only a verified file is
renamed to ``blobs/<etag>``, atomically; a file that fails verification is deleted.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

import httpx

from corral.hub.cache_layout import RepoLayout
from downloads.plan import DownloadError, PlannedFile

__all__ = ["CHUNK_BYTES", "fetch_blob"]

CHUNK_BYTES = 1 << 20
# Transient network failures are retried from the bytes already on disk.
_ATTEMPTS = 3


class _Hash(Protocol):
    def update(self, data: bytes, /) -> None: ...

    def hexdigest(self) -> str: ...


class _Checksum:
    """sha256 for LFS files; git's blob sha1 (``blob <size>\\0`` + bytes) for the others."""

    def __init__(self, file: PlannedFile) -> None:
        self.kind = "sha256" if file.sha256 is not None else "git-sha1"
        self.expected = file.sha256 if file.sha256 is not None else file.git_sha1
        self._hash: _Hash = hashlib.sha256()
        if file.sha256 is None:
            self._hash = hashlib.sha1(usedforsecurity=False)
            self._hash.update(b"blob %d\0" % file.size)

    def update(self, data: bytes) -> None:
        self._hash.update(data)

    def matches(self) -> tuple[bool, str]:
        actual = self._hash.hexdigest()
        return self.expected is None or actual == self.expected, actual


def _hash_prefix(partial: Path, checksum: _Checksum) -> int:
    """Feed the bytes already on disk to the checksum; returns how many there are."""
    done = 0
    with contextlib.suppress(FileNotFoundError), open(partial, "rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            checksum.update(chunk)
            done += len(chunk)
    return done


def _stream_rest(
    client: httpx.Client,
    file: PlannedFile,
    headers: Mapping[str, str],
    partial: Path,
    done: int,
    checksum: _Checksum,
    on_progress: Callable[[int], None],
) -> tuple[int, _Checksum, int]:
    """Append the bytes after ``done``; returns the new length, the checksum to verify and
    the bytes received."""
    request_headers = {**headers, "Accept-Encoding": "identity"}
    if done:
        request_headers["Range"] = f"bytes={done}-"
    received = 0
    with client.stream("GET", file.location, headers=request_headers) as response:
        if response.status_code == 200 and done:
            # The server ignored the range: start over rather than append the whole file again.
            done, checksum = 0, _Checksum(file)
            partial.write_bytes(b"")
        elif response.status_code not in (200, 206):
            raise DownloadError(f"{file.path}: the hub answered {response.status_code}")
        elif response.status_code == 206:
            content_range = response.headers.get("content-range", "")
            if not content_range.startswith(f"bytes {done}-"):
                raise DownloadError(f"{file.path}: unexpected Content-Range {content_range!r}")
        with open(partial, "ab", buffering=0) as sink:
            for chunk in response.iter_bytes():  # as they arrive, not batched
                if done + len(chunk) > file.size:
                    raise DownloadError(f"{file.path}: the hub sent more than {file.size} bytes")
                sink.write(chunk)
                checksum.update(chunk)
                done += len(chunk)
                received += len(chunk)
                on_progress(done)
    return done, checksum, received


def fetch_blob(
    client: httpx.Client,
    layout: RepoLayout,
    file: PlannedFile,
    *,
    headers: Mapping[str, str],
    on_progress: Callable[[int], None],
) -> int:
    """Make ``blobs/<etag>`` hold the verified file; returns the bytes transferred.

    ``on_progress(done)`` is called with the bytes on disk: once at the start, after each chunk.
    """
    blob, partial = layout.blob(file.etag), layout.partial(file.etag)
    blob.parent.mkdir(parents=True, exist_ok=True)
    with layout.locked(file.etag):
        if blob.is_file() and blob.stat().st_size == file.size:
            on_progress(file.size)  # fetched before, by us or by huggingface_hub
            return 0
        checksum = _Checksum(file)
        done = _hash_prefix(partial, checksum)
        if done > file.size:  # not a prefix of this file: useless
            partial.unlink()
            checksum, done = _Checksum(file), 0
        on_progress(done)
        transferred = 0
        for attempt in range(1, _ATTEMPTS + 1):
            if done == file.size:
                break
            try:
                done, checksum, received = _stream_rest(
                    client, file, headers, partial, done, checksum, on_progress
                )
                transferred += received
            except httpx.TransportError as exc:
                # What reached the disk is a prefix whatever happened; count it afresh.
                checksum = _Checksum(file)
                done = _hash_prefix(partial, checksum)
                if attempt == _ATTEMPTS:
                    raise DownloadError(
                        f"{file.path}: transfer failed after {done} of {file.size} bytes "
                        f"({exc or type(exc).__name__}); the next try resumes from there"
                    ) from None
        if done != file.size:
            raise DownloadError(
                f"{file.path}: the transfer ended after {done} of {file.size} bytes"
            )
        ok, actual = checksum.matches()
        if not ok:
            partial.unlink()
            raise DownloadError(
                f"{file.path}: {checksum.kind} mismatch (expected {checksum.expected}, got "
                f"{actual}); the corrupt file was removed"
            )
        os.replace(partial, blob)
        return transferred
