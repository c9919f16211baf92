"""Slot caches that outlive their worker (docs/serving.md, "KV cache across restarts").

Every slot's cache as each request left it (read at the engine's next idle moment, or before
anything overwrites it: :mod:`worker.cache.slot_cache`) and every copy the prompt cache keeps in
memory are written to ``--kv-cache-dir`` by a background thread (:mod:`worker.cache.kv_writer`), and
each slot's cache once more when the context is freed (a graceful stop, or sleep). So whatever
stops the worker (a kill, a crash, the watchdog), the next worker of the same model with the
same settings finds what was written before. A prompt that shares a long enough prefix with a
saved cache (:data:`BREAK_EVEN`) of its own cache scope (worker/host/cache_scope.py: another
key's files are never restored for it) is restored from its file instead of being prefilled. Files
are checked before anything reaches llama.cpp (:mod:`worker.cache.kv_file`); a file failing any
check is ignored with a warning.

The folder is shared by every worker and capped by ``--kv-cache-max``: after each write, the
least recently used files (by modification time; a restore touches its file) go first. The
engine thread restores; the writer thread writes and prunes; the index is shared under a lock.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from worker.cache.kv_file import (
    SAVED_NAME,
    TEMP_NAME,
    Invalid,
    SavedCache,
    file_name,
    file_size,
    private_folder,
    read_cache,
    read_state,
    write_cache,
)
from worker.cache.kv_key import LABEL, CacheKey, cache_key
from worker.cache.prompt_cache import SetAside, seq_state
from worker.engine.token_prefix import common_prefix
from worker.host.llama_bindings import llama_cpp
from worker.settings.worker_settings import WorkerSettings

__all__ = ["BREAK_EVEN", "MIN_TOKENS", "KvStats", "KvStore", "contains", "open_kv_store"]

_log = structlog.get_logger("corral.worker.kv_store")

# Shorter caches are not worth a file, and a restore must win at least this many tokens over
# what the slot already holds: reading a file is not free either.
MIN_TOKENS = 16
# Loading a file costs time in proportion to all the tokens it holds, prefilling in proportion
# to the tokens it would save: a file is loaded when the tokens it saves are at least this
# share of the tokens it holds. The break-even that bench/kv_disk.py measures on SmolLM2-135M
# (docs/benchmarks.md, "KV cache after a kill"): about 1/20 on two busy shared cores. Both
# costs grow with the model; near the break-even either choice costs about the same.
BREAK_EVEN = 0.05
# A temporary file this old was left by a worker killed while writing it.
_STALE_TEMP_SECONDS = 3600


@dataclass
class KvStats:
    """What the disk tier did, for the worker's ``/metrics`` (counters since the start)."""

    bytes_written: int = 0
    files_written: int = 0
    write_failures: int = 0
    writes_coalesced: int = 0  # a newer state of the same conversation took a pending write's place
    # Slot states read out of the context for the writer (engine thread), at an idle moment
    # or between two decode steps (the other streams waited), and how long that took.
    state_reads_idle: int = 0
    state_reads_busy: int = 0
    state_read_seconds_idle: float = 0.0
    state_read_seconds_busy: float = 0.0
    writes_dropped: int = 0  # more pending than the writer keeps: the oldest went unwritten
    hits_memory: int = 0
    hits_disk: int = 0
    tokens_memory: int = 0  # prompt tokens restored from each tier
    tokens_disk: int = 0

    def count_read(self, idle: bool, seconds: float) -> None:
        if idle:
            self.state_reads_idle += 1
            self.state_read_seconds_idle += seconds
        else:
            self.state_reads_busy += 1
            self.state_read_seconds_busy += seconds


def contains(longer: SavedCache, shorter: SavedCache) -> bool:
    """Whether ``longer`` holds all of ``shorter``: the same conversation, as far or further."""
    return (longer.scales, longer.scope) == (shorter.scales, shorter.scope) and (
        common_prefix(longer.tokens, shorter.tokens) == len(shorter.tokens)
    )


class KvStore:
    """One model's saved caches in ``root`` (shared with other models), capped at ``max_bytes``."""

    def __init__(
        self, root: Path, key: CacheKey, max_bytes: int, stats: KvStats | None = None
    ) -> None:
        self.root = root
        self.directory = root / key.label
        self._digest = key.digest
        self._max_bytes = max_bytes
        self.stats = stats or KvStats()
        self._lock = threading.Lock()  # the index: restored from one thread, written from another
        self._saved: dict[Path, SavedCache] = {}  # file → what its state holds
        self._scan()

    @property
    def saved(self) -> dict[Path, SavedCache]:
        with self._lock:
            return dict(self._saved)

    def _scan(self) -> None:
        try:
            paths = sorted(p for p in self.directory.glob("*.kv") if SAVED_NAME.fullmatch(p.name))
        except OSError:
            return
        for path in paths:  # a temporary file, complete or not, is never read
            try:
                self._saved[path] = read_cache(path, self._digest)
            except (OSError, Invalid) as exc:
                _log.warning("saved kv cache ignored", path=str(path), reason=str(exc))

    def _forget(self, path: Path) -> None:
        with self._lock:
            self._saved.pop(path, None)

    def restore(
        self,
        ctx: Any,
        seq: int,
        prompt: list[int],
        have: int,
        scales: tuple[float, ...] = (),
        scope: str = "",
        *,
        began: Callable[[], None] | None = None,
    ) -> list[int] | None:
        """Load the saved cache computed under ``scales`` in ``scope`` that shares the longest
        prefix with ``prompt`` into ``seq``, when that is worth it (:data:`BREAK_EVEN`).

        ``have`` is what the slot already reuses; a saved cache must beat it by
        :data:`MIN_TOKENS`. Returns the tokens ``seq`` now holds (empty when loading failed
        and llama.cpp cleared it), or None when nothing was restored and ``seq`` is untouched.
        """
        best: tuple[int, Path, SavedCache] | None = None
        for path, saved in self.saved.items():
            if (saved.scales, saved.scope) != (scales, scope):
                continue
            shared = common_prefix(saved.tokens, prompt)
            gain = shared - have
            if gain < max(MIN_TOKENS, BREAK_EVEN * len(saved.tokens)):
                continue
            if best is None or shared > best[0]:
                best = (shared, path, saved)
        if best is None:
            return None
        _, path, saved = best
        if began is not None:
            began()
        started = time.perf_counter()
        try:
            state = read_state(path, self._digest, saved)
        except (OSError, Invalid) as exc:
            _log.warning("saved kv cache ignored", path=str(path), reason=str(exc))
            self._forget(path)
            return None
        buffer = (ctypes.c_uint8 * len(state)).from_buffer(state)
        if llama_cpp.llama_state_seq_set_data(ctx, buffer, len(state), seq) != len(state):
            _log.warning("saved kv cache ignored", path=str(path), reason="llama.cpp refused it")
            self._forget(path)
            llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(ctx), seq, -1, -1)
            return []
        with contextlib.suppress(OSError):
            os.utime(path)  # most recently used: pruned last
        took = round((time.perf_counter() - started) * 1000, 1)
        _log.info("kv cache restored", slot=seq, tokens=len(saved.tokens), ms=took, path=str(path))
        return list(saved.tokens)

    def save(
        self,
        ctx: Any,
        slots: Iterable[tuple[int, SavedCache]],
        copies: Iterable[SetAside] = (),
    ) -> None:
        """Write each slot's cache (``(seq, what it holds)``) and each copy set aside from one
        (worker/cache/prompt_cache.py), then prune to the size cap: the stop's save, on the
        engine thread. Never raises (see :meth:`write`)."""
        wrote = False
        for seq, cache in slots:
            if len(cache.tokens) >= MIN_TOKENS and not self.holds(cache):
                state = seq_state(ctx, seq, llama_cpp.llama_state_seq_get_size(ctx, seq))
                if state is None:
                    _log.warning("kv cache not saved: llama.cpp could not copy it", slot=seq)
                    continue
                wrote = self.write(cache, state, prune=False) or wrote
        for copy in copies:
            wrote = self.write(copy.saved, copy.state, False) or wrote
        if wrote:
            self.prune()

    def holds(self, cache: SavedCache) -> bool:
        """Whether a file holds ``cache`` already: the same state, or a longer one of the same
        conversation (then only its age changes: used again)."""
        path = self.directory / file_name(cache)
        with self._lock:
            if self._saved.get(path) != cache:
                path = next((p for p, saved in self._saved.items() if contains(saved, cache)), path)
            indexed = path in self._saved
        if indexed:
            with contextlib.suppress(OSError):
                os.utime(path)  # never creates it, unlike touch()
                return True
            self._forget(path)  # deleted meanwhile (by hand, or another worker's prune)
        return False

    def write(self, cache: SavedCache, state: Any, prune: bool = True) -> bool:
        """Write ``cache`` with its ``state`` bytes unless it is too short or a file holds it
        already; older states of the same conversation (files whose tokens it starts with)
        go. Whether a file was written. Never raises: a cache that cannot be written (disk
        full, read-only folder) is skipped with a warning, and the request goes on."""
        if len(cache.tokens) < MIN_TOKENS or self.holds(cache):
            return False
        path = self.directory / file_name(cache)
        total = file_size(cache, memoryview(state).nbytes)
        if total > self._max_bytes:
            _log.warning("kv cache not saved: larger than --kv-cache-max", bytes=total)
            return False
        try:
            private_folder(self.directory)
            if shutil.disk_usage(self.directory).free < total:
                raise OSError("not enough free disk space")
            written = write_cache(path, self._digest, cache, state)
        except OSError as exc:
            self.stats.write_failures += 1
            _log.warning("kv cache not saved", path=str(path), reason=str(exc))
            return False
        self.stats.bytes_written += written
        self.stats.files_written += 1
        with self._lock:
            self._saved[path] = cache
            older = [p for p, saved in self._saved.items() if p != path and contains(cache, saved)]
        for old in older:  # this file holds all of theirs: they would never be loaded again
            with contextlib.suppress(OSError):
                old.unlink(missing_ok=True)
            self._forget(old)
        _log.debug("kv cache saved", tokens=len(cache.tokens), bytes=written, path=str(path))
        if prune:
            self.prune()
        return True

    def files(self) -> tuple[int, int]:
        """How many of this model's files the store knows, and their bytes."""
        count = size = 0
        for path in self.saved:
            with contextlib.suppress(OSError):
                size += path.stat().st_size
                count += 1
        return count, size

    def prune(self) -> None:
        """Delete the least recently used files of every model until the folder fits the cap.

        Only files named as :mod:`worker.cache.kv_file` names them, in folders named as cache
        keys label them, and never through a symbolic link: whatever else the folder holds is
        not ours.
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
                if TEMP_NAME.fullmatch(path.name):
                    if now - info.st_mtime > _STALE_TEMP_SECONDS:
                        path.unlink(missing_ok=True)
                elif SAVED_NAME.fullmatch(path.name):
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
            self._forget(path)
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


def open_kv_store(settings: WorkerSettings, stats: KvStats | None = None) -> KvStore | None:
    """The store for this worker's caches; None with ``--no-kv-persist`` or no model file."""
    if not settings.kv_persist:
        return None
    try:
        key = cache_key(settings)
    except OSError as exc:
        _log.warning("kv caches not kept: the model file cannot be read", reason=str(exc))
        return None
    return KvStore(settings.kv_cache_dir, key, settings.kv_cache_max, stats)
