"""The disk tier's writer: a background thread that writes slot states to the kv store.

The engine thread reads a slot's state out of the llama context, when it has no generation
running if it can (:mod:`worker.cache.slot_cache`; llama.cpp's context is not to be touched
from another thread while it decodes), and hands the bytes here; the file is written by this
thread, at a lower CPU priority, so that no request waits for a disk. Writes are coalesced: a
newer state of the same conversation (one whose tokens start with a pending one's) takes the
pending one's place, and one that a pending write holds entirely is not queued. At most
``max_pending`` states wait; past that the oldest is dropped (it is still in memory, or it was
superseded), so a slow disk costs files, never memory without bound.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from typing import Any

import structlog

from worker.cache.kv_file import SavedCache
from worker.cache.kv_store import KvStats, contains

__all__ = ["KvWriter"]

_log = structlog.get_logger("corral.worker.kv_writer")
# Nice value of the writer thread: file writing yields to decoding on a busy machine.
_NICE = 10


class KvWriter:
    """Writes ``(cache, state)`` pairs with ``write`` (the store's), one at a time, in order."""

    def __init__(
        self, write: Callable[[SavedCache, Any], bool], stats: KvStats, max_pending: int
    ) -> None:
        self._write = write
        self._stats = stats
        self._max_pending = max(max_pending, 1)
        self._pending: list[tuple[SavedCache, Any]] = []  # oldest first
        self._busy = False  # a write is under way
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="kv-writer", daemon=True)
        self._thread.start()

    def put(self, cache: SavedCache, state: Any) -> None:
        """Queue a write (engine thread); returns at once."""
        with self._changed:
            if any(contains(queued, cache) for queued, _ in self._pending):
                self._stats.writes_coalesced += 1
                return
            kept = [(c, s) for c, s in self._pending if not contains(cache, c)]
            self._stats.writes_coalesced += len(self._pending) - len(kept)
            kept.append((cache, state))
            while len(kept) > self._max_pending:
                kept.pop(0)
                self._stats.writes_dropped += 1
            self._pending = kept
            self._changed.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued write is done; False when ``timeout`` ran out first."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._pending and not self._busy, timeout)

    def _run(self) -> None:
        with contextlib.suppress(OSError, AttributeError):  # Linux: a thread has its own nice
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _NICE)
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._pending))
                cache, state = self._pending.pop(0)
                self._busy = True
            try:
                self._write(cache, state)
            except Exception:  # a cache is worth less than the worker: log, go on
                _log.exception("kv cache not saved")
            finally:
                with self._changed:
                    self._busy = False
                    self._changed.notify_all()
