"""One saved KV cache file of :mod:`worker.cache.kv_store`: its layout, its checks, its
atomic write.

A file holds a header (Corral's magic, the format version, the cache key's digest, the token
count, the LoRA adapter scale count, the state's size, the cache scope of the requests that may
reuse it, a CRC-32), the tokens, the adapter scales the state was computed under (none for a
cache computed without adapters), then llama.cpp's sequence state. Everything is checked
before any of it reaches llama.cpp. A file is written under a temporary name and renamed once
complete, so that a process killed while writing (SIGKILL, a crash, a power cut before the
rename) leaves no file under a real name: only a temporary one, which nothing reads and
:meth:`KvStore.prune` deletes once stale.
Files are the user's alone (0600, in folders of 0700): their tokens are callers' prompts.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import threading
import zlib
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "SAVED_NAME",
    "TEMP_NAME",
    "Invalid",
    "SavedCache",
    "file_name",
    "file_size",
    "private_folder",
    "read_cache",
    "read_state",
    "write_cache",
]

# magic, format version, key digest, token count, scale count, state size, cache scope (NUL
# padded), CRC-32 of the rest.
_HEADER = struct.Struct("<8sI32sIIQ16sI")
_MAGIC = b"CORRALKV"
# 2: adapter scales after the tokens; 3: the cache scope. Older files are ignored: a cache miss.
_VERSION = 3
# What a scope looks like in a file (worker/host/cache_scope.py): "" is the default one.
_SCOPE = re.compile(r"(?:[0-9a-f]{16})?")
# The names :func:`file_name` and :func:`write_cache` give files: the only ones the store
# reads or deletes (docs/security.md, "Local users and processes").
SAVED_NAME = re.compile(r"[0-9a-f]{32}\.kv")
TEMP_NAME = re.compile(r"\.[0-9a-f]{32}\.kv\.[0-9]+(?:\.[0-9]+)?\.tmp")


class Invalid(Exception):
    """A saved file that must not be restored; the message says why."""


@dataclass(frozen=True, slots=True)
class SavedCache:
    """What a file holds besides its state: the tokens, the adapter scales (``()``: none), and
    the cache scope whose requests may reuse it (``""``: the default one)."""

    tokens: list[int]
    scales: tuple[float, ...] = ()
    scope: str = ""


def _token_bytes(tokens: list[int]) -> bytes:
    return array("i", tokens).tobytes()


def _scale_bytes(scales: tuple[float, ...]) -> bytes:
    return array("d", scales).tobytes()


def file_name(cache: SavedCache) -> str:
    """The same tokens under the same scales in the same scope always get the same name: one
    file per cache, and two scopes' files of the same prompt are two files."""
    described = _token_bytes(cache.tokens) + _scale_bytes(cache.scales)
    digest = hashlib.sha256(described + cache.scope.encode())
    return digest.hexdigest()[:32] + ".kv"


def file_size(cache: SavedCache, state_size: int) -> int:
    return _HEADER.size + 4 * len(cache.tokens) + 8 * len(cache.scales) + state_size


def _read_header(handle: Any, digest: bytes) -> tuple[int, int, int, str, int]:
    raw = handle.read(_HEADER.size)
    if len(raw) < _HEADER.size:
        raise Invalid("shorter than its header")
    magic, version, key, n_tokens, n_scales, state_size, padded, crc = _HEADER.unpack(raw)
    if magic != _MAGIC:
        raise Invalid("not a Corral kv cache file")
    if version != _VERSION:
        raise Invalid(f"format version {version}, expected {_VERSION}")
    if key != digest:
        raise Invalid("saved for another model file or other cache settings")
    scope = padded.rstrip(b"\0").decode("ascii", "replace")
    if not _SCOPE.fullmatch(scope):
        raise Invalid("not a cache scope")
    expected = _HEADER.size + 4 * n_tokens + 8 * n_scales + state_size
    actual = os.fstat(handle.fileno()).st_size
    if actual != expected:
        raise Invalid(f"truncated or padded: {actual} bytes, header says {expected}")
    return n_tokens, n_scales, state_size, scope, crc


def read_cache(path: Path, digest: bytes) -> SavedCache:
    """The tokens, scales and scope of a file saved under the key ``digest``; :class:`Invalid`
    or ``OSError`` when it cannot be one."""
    with path.open("rb") as handle:
        n_tokens, n_scales, _, scope, _ = _read_header(handle, digest)
        tokens, scales = array("i"), array("d")
        tokens.frombytes(handle.read(4 * n_tokens))
        scales.frombytes(handle.read(8 * n_scales))
    return SavedCache(tokens.tolist(), tuple(scales), scope)


def read_state(path: Path, digest: bytes, cache: SavedCache) -> bytearray:
    """The state bytes of ``path``, which :func:`read_cache` found to hold ``cache``."""
    with path.open("rb") as handle:
        n_tokens, n_scales, state_size, scope, crc = _read_header(handle, digest)
        described = handle.read(4 * n_tokens + 8 * n_scales)
        state = bytearray(state_size)
        if handle.readinto(state) != state_size:
            raise Invalid("truncated while reading")
    if zlib.crc32(state, zlib.crc32(described, zlib.crc32(scope.encode()))) != crc:
        raise Invalid("checksum mismatch: the file is corrupted")
    if described != _token_bytes(cache.tokens) + _scale_bytes(cache.scales) or scope != cache.scope:
        raise Invalid("changed since it was indexed")
    return state


def private_folder(folder: Path) -> None:
    """``folder`` and its missing parents made as ``mkdir -p`` does, but 0700 whatever the
    umask (``Path.mkdir`` gives parents the default mode)."""
    for missing in reversed([folder, *folder.parents]):
        if not missing.is_dir():
            missing.mkdir(mode=0o700, exist_ok=True)


def write_cache(path: Path, digest: bytes, cache: SavedCache, state: Any) -> int:
    """Write ``cache`` with its ``state`` (any buffer) to ``path`` through a temporary file;
    the bytes written. ``OSError`` (the temporary file removed) when it cannot be written."""
    described = _token_bytes(cache.tokens) + _scale_bytes(cache.scales)
    scope = cache.scope.encode()
    crc = zlib.crc32(state, zlib.crc32(described, zlib.crc32(scope)))
    size = memoryview(state).nbytes
    n_tokens, n_scales = len(cache.tokens), len(cache.scales)
    header = _HEADER.pack(_MAGIC, _VERSION, digest, n_tokens, n_scales, size, scope, crc)
    # Unique per process and thread: two writers of the same cache never share a temporary file.
    temp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_native_id()}.tmp")
    try:
        with open(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as handle:
            handle.write(header)
            handle.write(described)
            handle.write(state)
        os.replace(temp, path)  # never a half-written file under the real name
    except OSError:
        temp.unlink(missing_ok=True)
        raise
    return _HEADER.size + len(described) + size
