"""Downloading one model in the foreground, with a progress bar: ``corral pull`` and
``corral serve -hf`` when the model is not cached yet.

It runs the same download child a router starts for ``POST /models`` (``python -m downloads``)
and draws the child's progress messages, with speed and time left, as ``ollama pull`` does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO, TextIO

import msgspec

from corral.children.download_payloads import (
    DOWNLOADING_STATE,
    DownloadOutcome,
    DownloadProgress,
    decode_download_payload,
)
from corral.children.environment import child_environment
from corral.children.protocol import EXIT_COMMAND, LineSplitter, StateMessage, parse_line
from corral.hub.sizes import human_size

__all__ = ["DownloadFailed", "ProgressBar", "download_model", "format_duration", "hub_token"]

_BAR_WIDTH = 30


class DownloadFailed(Exception):
    """The download did not finish; the message says why (the child's words when it had any)."""


def format_duration(seconds: float) -> str:
    """``75`` → ``1m15s``, ``3725`` → ``1h02m``: short enough for a progress line."""
    whole = int(seconds + 0.5)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


class _Rate:
    """Bytes per second of one file since its first progress message."""

    def __init__(self, now: float, done: int) -> None:
        self.since, self.first = now, done

    def speed(self, now: float, done: int) -> float | None:
        elapsed = now - self.since
        return (done - self.first) / elapsed if elapsed > 0 and done > self.first else None


class ProgressBar:
    """One line per file: redrawn in place on a terminal, every tenth otherwise (logs, CI).

    Speed is the average since the file's first message (a resumed download counts only what
    this run fetched); ``clock`` is injectable so that tests need no real time.
    """

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self._tty = stream.isatty()
        self._clock = clock
        self._shown: dict[str, int] = {}
        self._rates: dict[str, _Rate] = {}

    def __call__(self, progress: DownloadProgress) -> None:
        name, done, size = progress.path or progress.url, progress.downloaded, progress.total
        now = self._clock()
        rate = self._rates.setdefault(name, _Rate(now, done))
        percent = 100 * done // size if size else 100
        if not self._tty:
            if self._shown.get(name, -1) >= percent // 10:
                return
            self._shown[name] = percent // 10
        filled = _BAR_WIDTH * percent // 100
        bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
        line = f"{name} [{bar}] {percent:3d}% {human_size(done)}/{human_size(size)}"
        speed = rate.speed(now, done)
        if speed is not None:
            line += f" {human_size(speed)}/s"
            if done < size:
                line += f" {format_duration((size - done) / speed)} left"
        end = "\n" if done >= size or not self._tty else ""
        # "\x1b[K" clears what a longer previous line left at the end.
        self._stream.write(
            ("\r" if self._tty else "") + line + ("\x1b[K" if self._tty else "") + end
        )
        self._stream.flush()


def _keep_tail(stream: IO[bytes], tail: deque[str]) -> None:
    for line in stream:
        tail.append(line.decode("utf-8", "replace").rstrip())


def _read_outcome(stdout: IO[bytes], bar: ProgressBar) -> DownloadOutcome | None:
    splitter = LineSplitter()
    while chunk := os.read(stdout.fileno(), 65536):
        for line in splitter.feed(chunk):
            message = parse_line(line)
            if not isinstance(message, StateMessage) or message.state != DOWNLOADING_STATE:
                continue
            try:
                payload = decode_download_payload(message.payload)
            except msgspec.ValidationError:
                continue
            if isinstance(payload, DownloadOutcome):
                return payload
            bar(payload)
    return None


def hub_token(given: str | None) -> str | None:
    """The token download children get, never workers: the one given (``--hf-token``), else
    ``HF_TOKEN``, else ``HUGGING_FACE_HUB_TOKEN``."""
    return given or os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")


def download_model(reference: str, cache_dir: Path, *, token: str | None, progress: TextIO) -> str:
    """Download ``org/repo[:TAG]`` into the cache; returns the model's name there.

    Raises :class:`DownloadFailed`; ``KeyboardInterrupt`` cancels the child by the protocol
    (its partial files stay, so the same command resumes) and is re-raised.
    """
    env = child_environment()  # without secrets, with the lifeline's pid: it dies with us
    if token:
        env["HF_TOKEN"] = token
    child = subprocess.Popen(
        [sys.executable, "-m", "downloads", reference, "--cache-dir", str(cache_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,  # Ctrl-C reaches only us; we cancel the child by the protocol
    )
    stdin, stdout, stderr = child.stdin, child.stdout, child.stderr
    if stdin is None or stdout is None or stderr is None:
        raise RuntimeError("the download child has no pipes")
    log_tail: deque[str] = deque(maxlen=20)
    threading.Thread(target=_keep_tail, args=(stderr, log_tail), daemon=True).start()
    try:
        outcome = _read_outcome(stdout, ProgressBar(progress))
    except KeyboardInterrupt:
        stdin.write(EXIT_COMMAND + b"\n")
        stdin.close()
        child.wait()
        raise
    stdin.close()
    child.wait()
    if outcome is None:
        words = "\n".join(log_tail)
        raise DownloadFailed(
            (words + "\n" if words else "") + f"the download stopped (exit code {child.returncode})"
        )
    if not outcome.succeeded:
        raise DownloadFailed(outcome.error or "the download failed")
    return outcome.model or reference
