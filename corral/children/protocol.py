"""The stdout/stdin line protocol between the router and its children (docs/protocol.md §1).

Both ends live here so they cannot drift apart: the router decodes with :class:`LineSplitter` and
:func:`parse_line`; children encode with :class:`StateWriter`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import msgspec

__all__ = [
    "CACHE_SCOPE_HEADER",
    "EXIT_COMMAND",
    "EXIT_FAILED",
    "EXIT_STOPPED",
    "LOAD_PREFIX",
    "MAX_LINE_BYTES",
    "RELEASE_COMMAND",
    "REQUEST_ID_HEADER",
    "RESTORE_STATE",
    "SPARE_STATE",
    "STATE_PREFIX",
    "THREADS_PREFIX",
    "ChildLine",
    "LineSplitter",
    "LoadCommand",
    "LogLine",
    "MalformedLine",
    "RestoreNote",
    "StateMessage",
    "StateWriter",
    "ThreadsCommand",
    "encode_load",
    "encode_state",
    "encode_threads",
    "parse_line",
    "parse_load",
    "parse_restore",
    "parse_threads",
]

STATE_PREFIX = b"cmd_child_to_router:state:"
EXIT_COMMAND = b"cmd_router_to_child:exit"
# Corral's own: the state a spare worker sends once it is warm, and the command that hands it
# the model it is to serve (``python -m worker --spare``).
SPARE_STATE = "spare"
LOAD_PREFIX = b"cmd_router_to_child:load:"
# Corral's own: a worker that began as a spare is asked to stop serving its model and be a spare
# again (it answers with the spare state), instead of exiting.
RELEASE_COMMAND = b"cmd_router_to_child:release"
# Corral's own: a worker's note that it begins, then has ended, loading a saved KV cache for a
# request the router relayed with its id in REQUEST_ID_HEADER (the activity view's "restoring").
RESTORE_STATE = "restore"
# Corral's own: the threads a worker's context computes with from its next decode on, the
# router's share of the CPU cores among the models busy at once (router/scheduling/cores.py).
THREADS_PREFIX = b"cmd_router_to_child:threads:"
REQUEST_ID_HEADER = b"x-corral-request-id"
# Corral's own: whose prompt caches a request relayed to a worker may reuse, and be told it
# reused (router/security/cache_scope.py); a worker reuses a cached prefix only within a scope.
CACHE_SCOPE_HEADER = b"x-corral-cache-scope"
# A child's exit code, as the router reads it: 0 when it was asked to stop (or had finished), 1
# when it failed, with the reason in its last error log line. A signal death is the router's to
# name (128 + signal).
EXIT_STOPPED = 0
EXIT_FAILED = 1
# Same bound as upstream: a child that writes megabytes without a newline must not make the router
# buffer without limit.
MAX_LINE_BYTES = 1 << 20


class StateMessage(msgspec.Struct, frozen=True):
    """``{"state": …, "payload": …}``: loading, ready, sleeping or downloading."""

    state: str
    payload: dict[str, Any] = msgspec.field(default_factory=dict)


class LoadCommand(msgspec.Struct, frozen=True):
    """``{"argv": […], "key": …}``: the worker flags a spare worker parses as if it had been
    started with them (``--model FILE --alias NAME …``, without the interpreter and
    ``-m worker``), and the key the router will call it with (``corral/children/worker_key.py``;
    a new worker gets it in its environment; empty: none)."""

    argv: list[str]
    key: str = ""


class ThreadsCommand(msgspec.Struct, frozen=True):
    """``{"threads": N, "threads_batch": M}``: what the worker's context computes with, one
    token at a time and reading prompts (llama.cpp's ``llama_set_n_threads``)."""

    threads: int
    threads_batch: int


class RestoreNote(msgspec.Struct, frozen=True):
    """The payload of a ``restore`` state line: the worker begins (``done`` false) or has ended
    (``done`` true, with the prompt ``tokens`` the saved cache gave back, 0 when none could be
    used) loading a saved KV cache for the router's request ``request``, ``at`` that time
    (``time.time()``: the router's clock too, on the same host)."""

    request: str
    done: bool = False
    tokens: int = 0
    at: float = 0.0


def parse_restore(payload: dict[str, Any]) -> RestoreNote | None:
    """The note in a ``restore`` state line's payload; None when it is not one."""
    try:
        return msgspec.convert(payload, RestoreNote)
    except msgspec.ValidationError:
        return None


class LogLine(NamedTuple):
    text: str


class MalformedLine(NamedTuple):
    text: str
    reason: str


ChildLine = StateMessage | LogLine | MalformedLine

_decode_state = msgspec.json.Decoder(StateMessage).decode
_decode_load = msgspec.json.Decoder(LoadCommand).decode
_decode_threads = msgspec.json.Decoder(ThreadsCommand).decode
T = TypeVar("T")


def encode_load(argv: list[str], key: str = "") -> bytes:
    return LOAD_PREFIX + msgspec.json.encode(LoadCommand(argv, key)) + b"\n"


def _command(line: bytes, prefix: bytes, decode: Callable[[bytes], T]) -> T | None:
    """The JSON after ``prefix`` in a stdin line; None if it is not one or does not decode."""
    text = line.strip()
    if not text.startswith(prefix):
        return None
    try:
        return decode(text[len(prefix) :])
    except msgspec.DecodeError:
        return None


def parse_load(line: bytes) -> LoadCommand | None:
    """The load command in a stdin line, or None if the line is not one (or does not decode)."""
    return _command(line, LOAD_PREFIX, _decode_load)


def encode_threads(threads: int, threads_batch: int) -> bytes:
    return THREADS_PREFIX + msgspec.json.encode(ThreadsCommand(threads, threads_batch)) + b"\n"


def parse_threads(line: bytes) -> ThreadsCommand | None:
    """The threads command in a stdin line, or None if the line is not one (or does not
    decode, or asks for fewer than one thread)."""
    command = _command(line, THREADS_PREFIX, _decode_threads)
    return command if command and min(command.threads, command.threads_batch) >= 1 else None


def encode_state(state: str, payload: dict[str, Any] | None = None) -> bytes:
    # The leading newline ends any partial log line a library left on the same stream, so the
    # state line always starts a line of its own.
    body = msgspec.json.encode(StateMessage(state, payload or {}))
    return b"\n" + STATE_PREFIX + body + b"\n"


def parse_line(line: bytes) -> ChildLine:
    """Classify one line (without its newline) read from a child's stdout or stderr."""
    text = line.rstrip(b"\r")
    if not text.startswith(STATE_PREFIX):
        return LogLine(text.decode("utf-8", "replace"))
    try:
        return _decode_state(text[len(STATE_PREFIX) :])
    except msgspec.DecodeError as exc:
        return MalformedLine(text.decode("utf-8", "replace"), str(exc))


class LineSplitter:
    """Turns arbitrary chunks of a byte stream into lines.

    A line longer than ``max_line`` is cut at that length and the rest of it is skipped, so memory
    stays bounded whatever the child writes.
    """

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._max_line = max_line
        self._buffer = bytearray()
        self._skipping = False

    def feed(self, data: bytes) -> list[bytes]:
        lines: list[bytes] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                self._append(data[start:], lines)
                return lines
            self._append(data[start:end], lines)
            if self._skipping:
                self._skipping = False
            else:
                lines.append(bytes(self._buffer))
            self._buffer.clear()
            start = end + 1

    def flush(self) -> list[bytes]:
        """Return the unterminated tail at end of stream, if any."""
        tail = [] if self._skipping or not self._buffer else [bytes(self._buffer)]
        self._buffer.clear()
        self._skipping = False
        return tail

    def _append(self, piece: bytes, lines: list[bytes]) -> None:
        if self._skipping:
            return
        room = self._max_line - len(self._buffer)
        if len(piece) <= room:
            self._buffer += piece
            return
        self._buffer += piece[:room]
        lines.append(bytes(self._buffer))
        self._buffer.clear()
        self._skipping = True


class StateWriter:
    """Writes state lines on a private duplicate of stdout.

    :meth:`claim_stdout` moves fd 1 onto stderr, so a stray ``print`` or a C library writing to
    stdout can never corrupt the protocol stream.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()

    @classmethod
    def claim_stdout(cls) -> StateWriter:
        private = os.dup(1)
        os.dup2(2, 1)
        return cls(private)

    def send(self, state: str, payload: dict[str, Any] | None = None) -> None:
        data = encode_state(state, payload)
        with self._lock:
            while data:
                data = data[os.write(self._fd, data) :]
