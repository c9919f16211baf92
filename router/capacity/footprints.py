"""What each model was measured to take on the GPUs, kept across router restarts.

The device planner expects a model to take what it took the last time it ran with the same
settings (its worker reports its bytes per device once loaded), else an estimate from its GGUF
header (router/scheduling/placement/device_planner.py). That measurement lived in the model's
state, so a restarted router placed every model by its estimate again. :class:`Footprints`
keeps the most each model took in a small file beside Corral's other caches
(``$XDG_CACHE_HOME/corral/footprints.json``, else ``~/.cache/corral/``), keyed by the model's
files (path, size, modification time: a new download or a changed file is a new model) and its
worker options (any change to them may change what it takes, so it is measured afresh).

The file is local state, never trusted to be there or to be whole: a missing, unreadable, corrupt
or foreign file is ignored (with one warning) and replaced at the next measurement; a write goes
to a temporary file renamed over the old one, so a crash mid-write leaves the old file whole.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import msgspec
import structlog

from router.catalogue.catalogue import CatalogueEntry
from router.observe.events import ModelEvent
from router.workers.model_state import ModelState, Status

__all__ = ["Footprints", "default_footprints_path", "footprint_key"]

_log = structlog.get_logger("corral.footprints")
_FORMAT = "corral-footprints"
_VERSION = 1
_KEPT = 512  # models remembered; the least recently measured go first


class _Saved(msgspec.Struct):
    format: str
    version: int
    gpu_bytes: dict[str, int]  # footprint_key → the most the model took on the GPUs, in bytes


def default_footprints_path(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/corral/footprints.json``, else ``~/.cache/corral/footprints.json``."""
    base = (os.environ if env is None else env).get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "corral" / "footprints.json"


def footprint_key(entry: CatalogueEntry) -> str | None:
    """The model's files as they are now and its options, hashed; None when a file is missing."""
    files = []
    for file in entry.files():
        try:
            info = file.stat()
        except OSError:
            return None
        files.append([str(file.resolve()), info.st_size, info.st_mtime_ns])
    text = json.dumps({"files": files, "options": entry.options}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class Footprints:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._bytes = self._read()

    def _read(self) -> dict[str, int]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as error:
            _log.warning(
                "measured footprints unreadable: ignored", path=str(self.path), error=str(error)
            )
            return {}
        try:
            saved = msgspec.json.decode(raw, type=_Saved)
        except msgspec.DecodeError as error:  # corrupt, or another program's file
            _log.warning(
                "measured footprints unreadable: ignored", path=str(self.path), error=str(error)
            )
            return {}
        if (saved.format, saved.version) != (_FORMAT, _VERSION):
            _log.warning(
                "measured footprints of another format: ignored",
                path=str(self.path),
                format=saved.format,
                version=saved.version,
            )
            return {}
        return {key: size for key, size in saved.gpu_bytes.items() if size > 0}

    def get(self, entry: CatalogueEntry) -> int:
        """The most ``entry`` took on the GPUs with these files and settings; 0 if unknown."""
        key = footprint_key(entry)
        return self._bytes.get(key, 0) if key is not None else 0

    def note(self, entry: CatalogueEntry, gpu_bytes: int) -> None:
        """``entry`` was measured at ``gpu_bytes`` (its peak): kept, and written, if more."""
        key = footprint_key(entry)
        # The most it took, as the router's own memory of it: a run whose context the router's
        # share shrank says little about what it takes alone.
        if key is None or gpu_bytes <= self._bytes.get(key, 0):
            return
        self._bytes.pop(key, None)  # to the end: the most recently measured
        self._bytes[key] = gpu_bytes
        while len(self._bytes) > _KEPT:
            del self._bytes[next(iter(self._bytes))]
        self._write()

    def _write(self) -> None:
        saved = _Saved(_FORMAT, _VERSION, self._bytes)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".footprints-")
            try:
                with os.fdopen(handle, "wb") as file:
                    file.write(msgspec.json.encode(saved))
                os.replace(temporary, self.path)
            except BaseException:
                os.unlink(temporary)
                raise
        except OSError as error:  # a read-only or full disk: the next router estimates again
            _log.warning("measured footprints not saved", path=str(self.path), error=str(error))

    def listener(
        self, models: Callable[[], Mapping[str, ModelState]]
    ) -> Callable[[ModelEvent], None]:
        """For the pool's events: each model that loaded is kept at its measured peak."""

        def loaded(event: ModelEvent) -> None:
            status = (event.data or {}).get("status")
            state = models().get(event.model) if status == Status.LOADED else None
            if state is not None and state.gpu_peak:
                self.note(state.entry, state.gpu_peak)

        return loaded
