"""Slot caches that outlive their worker (docs/serving.md, "KV cache across restarts").

Before the context is freed (a graceful stop: eviction, ttl, unload, reload; or sleep), each
slot's sequence state is written to ``--kv-cache-dir`` with the tokens it holds. When the model
runs again, a prompt that extends a saved token list is restored from its file instead of
being prefilled. Files are checked before anything reaches llama.cpp: Corral's magic, the
cache key (:mod:`worker.cache.kv_key`), the size announced in the header (truncation) and a CRC-32
over tokens and state (corruption); a file failing any check is ignored with a warning.

The folder is shared by every worker and capped by ``--kv-cache-max``: after saving, the least
recently used files (by modification time; a restore touches its file) go first. Only the
engine thread calls into this module.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import re
import shutil
import stat
import struct
import time
import zlib
from array import array
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

import structlog

from worker.cache.kv_key import LABEL, CacheKey, cache_key
from worker.cache.prompt_cache import SetAside, seq_state
from worker.engine.token_prefix import common_prefix
from worker.host.llama_bindings import llama_cpp
from worker.settings.worker_settings import WorkerSettings

__all__ = ["MIN_TOKENS", "KvStore", "open_kv_store"]

_log = structlog.get_logger("corral.worker.kv_store")

# magic, format version, key digest, token count, state size, CRC-32 of tokens + state.
_HEADER = struct.Struct("<8sI32sIQI")
_MAGIC = b"CORRALKV"
_VERSION = 1
_SUFFIX = ".kv"
# Shorter caches are not worth a file, and a restore must win at least this many tokens over
# what the slot already holds: reading a file is not free either.
MIN_TOKENS = 16
# A temporary file this old was left by a worker killed while saving.
_STALE_TEMP_SECONDS = 3600
# The names this module gives files (_file_name, and the temporary name in _save_one): the
# only ones prune deletes, in LABEL folders only, so a shared folder keeps everyone else's
# files (docs/security.md, "Local users and processes").
_SAVED_NAME = re.compile(r"[0-9a-f]{32}\.kv")
_TEMP_NAME = re.compile(r"\.[0-9a-f]{32}\.kv\.[0-9]+\.tmp")


def _token_bytes(tokens: list[int]) -> bytes:
    return array("i", tokens).tobytes()


def _file_name(tokens: list[int]) -> str:
    return hashlib.sha256(_token_bytes(tokens)).hexdigest()[:32] + _SUFFIX


class _Invalid(Exception):
    """A saved file that must not be restored; the message says why."""


class KvStore:
    """One model's saved caches in ``root`` (shared with other models), capped at ``max_bytes``."""

    def __init__(self, root: Path, key: CacheKey, max_bytes: int) -> None:
        self.root = root
        self.directory = root / key.label
        self._digest = key.digest
        self._max_bytes = max_bytes
        self._saved: dict[Path, list[int]] = {}  # file → the tokens its state holds
        self._scan()

    @property
    def saved(self) -> dict[Path, list[int]]:
        return dict(self._saved)

    def _scan(self) -> None:
        try:
            paths = sorted(
                p for p in self.directory.glob("*" + _SUFFIX) if _SAVED_NAME.fullmatch(p.name)
            )
        except OSError:
            return
        for path in paths:
            try:
                self._saved[path] = self._read_tokens(path)
            except (OSError, _Invalid) as exc:
                _log.warning("saved kv cache ignored", path=str(path), reason=str(exc))

    def _read_header(self, handle: Any) -> tuple[int, int, int]:
        raw = handle.read(_HEADER.size)
        if len(raw) < _HEADER.size:
            raise _Invalid("shorter than its header")
        magic, version, digest, n_tokens, state_size, crc = _HEADER.unpack(raw)
        if magic != _MAGIC:
            raise _Invalid("not a Corral kv cache file")
        if version != _VERSION:
            raise _Invalid(f"format version {version}, expected {_VERSION}")
        if digest != self._digest:
            raise _Invalid("saved for another model file or other cache settings")
        expected = _HEADER.size + 4 * n_tokens + state_size
        actual = os.fstat(handle.fileno()).st_size
        if actual != expected:
            raise _Invalid(f"truncated or padded: {actual} bytes, header says {expected}")
        return n_tokens, state_size, crc

    def _read_tokens(self, path: Path) -> list[int]:
        with path.open("rb") as handle:
            n_tokens, _, _ = self._read_header(handle)
            tokens = array("i")
            tokens.frombytes(handle.read(4 * n_tokens))
        return tokens.tolist()

    def _read_state(self, path: Path, tokens: list[int]) -> bytearray:
        with path.open("rb") as handle:
            n_tokens, state_size, crc = self._read_header(handle)
            token_bytes = handle.read(4 * n_tokens)
            state = bytearray(state_size)
            if handle.readinto(state) != state_size:
                raise _Invalid("truncated while reading")
        if zlib.crc32(state, zlib.crc32(token_bytes)) != crc:
            raise _Invalid("checksum mismatch: the file is corrupted")
        if token_bytes != _token_bytes(tokens):
            raise _Invalid("changed since it was indexed")
        return state

    def restore(self, ctx: Any, seq: int, prompt: list[int], have: int) -> list[int] | None:
        """Load the saved cache that shares the longest prefix with ``prompt`` into ``seq``.

        ``have`` is what the slot already reuses; a saved cache must beat it by
        :data:`MIN_TOKENS`. Returns the tokens ``seq`` now holds (empty when loading failed
        and llama.cpp cleared it), or None when nothing was restored and ``seq`` is untouched.
        """
        best: tuple[int, Path, list[int]] | None = None
        for path, tokens in self._saved.items():
            shared = common_prefix(tokens, prompt)
            if shared >= have + MIN_TOKENS and (best is None or shared > best[0]):
                best = (shared, path, tokens)
        if best is None:
            return None
        _, path, tokens = best
        try:
            state = self._read_state(path, tokens)
        except (OSError, _Invalid) as exc:
            _log.warning("saved kv cache ignored", path=str(path), reason=str(exc))
            del self._saved[path]
            return None
        buffer = (ctypes.c_uint8 * len(state)).from_buffer(state)
        if llama_cpp.llama_state_seq_set_data(ctx, buffer, len(state), seq) != len(state):
            _log.warning("saved kv cache ignored", path=str(path), reason="llama.cpp refused it")
            del self._saved[path]
            llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(ctx), seq, -1, -1)
            return []
        with contextlib.suppress(OSError):
            os.utime(path)  # most recently used: pruned last
        _log.info("kv cache restored", slot=seq, tokens=len(tokens), path=str(path))
        return list(tokens)

    def save(
        self,
        ctx: Any,
        slots: Iterable[tuple[int, list[int]]],
        copies: Iterable[SetAside] = (),
    ) -> None:
        """Write each slot's cache (``(seq, tokens)``) and each copy set aside from one
        (worker/cache/prompt_cache.py), then prune to the size cap.

        Never raises: a cache that cannot be written (disk full, read-only folder) is skipped
        with a warning.
        """
        wrote = False
        for seq, tokens in slots:
            if len(tokens) >= MIN_TOKENS:
                size = llama_cpp.llama_state_seq_get_size(ctx, seq)
                read = partial(seq_state, ctx, seq, size)
                wrote = self._save_one(list(tokens), size, read, seq) or wrote
        for copy in copies:
            if len(copy.tokens) >= MIN_TOKENS:
                read = partial(_copied_state, copy)
                wrote = self._save_one(copy.tokens, copy.size, read) or wrote
        if wrote:
            self.prune()

    def _save_one(
        self, tokens: list[int], size: int, read: Callable[[], Any], seq: int = -1
    ) -> bool:
        """Write ``tokens`` and the ``size`` bytes of state ``read()`` gives (None: it could
        not be copied)."""
        path = self.directory / _file_name(tokens)
        if path in self._saved and self._saved[path] == tokens and path.exists():
            os.utime(path)  # the same cache, used again: only its age changes
            return False
        total = _HEADER.size + 4 * len(tokens) + size
        if total > self._max_bytes:
            _log.warning("kv cache not saved: larger than --kv-cache-max", slot=seq, bytes=total)
            return False
        temp = self.directory / f".{path.name}.{os.getpid()}.tmp"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            if shutil.disk_usage(self.directory).free < total:
                raise OSError("not enough free disk space")
            state = read()
            if state is None:
                _log.warning("kv cache not saved: llama.cpp could not copy it", slot=seq)
                return False
            token_bytes = _token_bytes(tokens)
            crc = zlib.crc32(state, zlib.crc32(token_bytes))
            header = _HEADER.pack(_MAGIC, _VERSION, self._digest, len(tokens), size, crc)
            with temp.open("wb") as handle:
                handle.write(header)
                handle.write(token_bytes)
                handle.write(state)
            os.replace(temp, path)  # never a half-written file under the real name
        except OSError as exc:
            _log.warning("kv cache not saved", slot=seq, path=str(path), reason=str(exc))
            temp.unlink(missing_ok=True)
            return False
        self._saved[path] = tokens
        _log.info("kv cache saved", slot=seq, tokens=len(tokens), bytes=total, path=str(path))
        return True

    def prune(self) -> None:
        """Delete the least recently used files of every model until the folder fits the cap.

        Only files named as this module names them, in folders named as cache keys label
        them, and never through a symbolic link: whatever else the folder holds is not ours.
        """
        files: list[tuple[float, int, Path]] = []
        now = time.time()
        try:
            for path in self._own_files():
                try:
                    info = path.lstat()
                except OSError:
                    continue  # another worker removed it meanwhile
                if not stat.S_ISREG(info.st_mode):
                    continue
                if _TEMP_NAME.fullmatch(path.name):
                    if now - info.st_mtime > _STALE_TEMP_SECONDS:
                        path.unlink(missing_ok=True)
                elif _SAVED_NAME.fullmatch(path.name):
                    files.append((info.st_mtime, info.st_size, path))
        except OSError as exc:
            _log.warning("kv cache folder not pruned", path=str(self.root), reason=str(exc))
            return
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):
            if total <= self._max_bytes:
                break
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                _log.warning("kv cache file not removed", path=str(path), reason=str(exc))
                continue
            total -= size
            self._saved.pop(path, None)
            _log.info("kv cache pruned", path=str(path), bytes=size)

    def _own_files(self) -> list[Path]:
        """Every file in a cache-key folder of the root (see :meth:`prune`)."""
        files: list[Path] = []
        for folder in self.root.iterdir():
            if not LABEL.fullmatch(folder.name):
                continue
            try:
                if stat.S_ISDIR(folder.lstat().st_mode):
                    files.extend(folder.iterdir())
            except OSError:
                continue  # another worker's folder, removed meanwhile
        return files


def _copied_state(copy: SetAside) -> Any:
    return copy.state


def open_kv_store(settings: WorkerSettings) -> KvStore | None:
    """The store for this worker's caches; None with ``--no-kv-persist`` or no model file."""
    if not settings.kv_persist:
        return None
    try:
        key = cache_key(settings)
    except OSError as exc:
        _log.warning("kv caches not kept: the model file cannot be read", reason=str(exc))
        return None
    return KvStore(settings.kv_cache_dir, key, settings.kv_cache_max)
