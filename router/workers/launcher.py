"""Launching child processes and reading what they say: the "launch a worker" seam.

The child supervisor only sees :class:`ChildProcess`; :class:`SubprocessLauncher` is the real
implementation (anyio subprocesses in their own session, so a whole tree can be signalled).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import anyio
import psutil
from anyio.abc import ByteReceiveStream, Process

from corral.children.protocol import (
    EXIT_COMMAND,
    RELEASE_COMMAND,
    ChildLine,
    LineSplitter,
    encode_load,
    encode_threads,
    parse_line,
)
from corral.http.cors import NO_CORS
from router.catalogue.capabilities import declares_pooling
from router.catalogue.catalogue import CatalogueEntry

__all__ = [
    "WORKER_COMMAND",
    "ChildProcess",
    "SubprocessLauncher",
    "WorkerLauncher",
    "process_rss",
    "worker_argv",
]

# How a worker is started; its flags follow (docs/protocol.md §1).
WORKER_COMMAND = (sys.executable, "-m", "worker")


class ChildProcess(Protocol):
    pid: int

    async def pump(self, on_line: Callable[[ChildLine], None]) -> int:
        """Feed every stdout/stderr line to ``on_line`` until the child exits; return its code."""
        ...

    async def send_exit(self) -> None: ...

    async def send_load(self, argv: Sequence[str], key: str) -> None:
        """Hand a spare worker its model: the flags it is to serve with, and the key the router
        will call it with (a pipe, which no other user can read: docs/protocol.md §8)."""
        ...

    async def send_release(self) -> None:
        """Ask a worker that began as a spare to stop serving its model and be a spare again."""
        ...

    async def send_threads(self, threads: int, threads_batch: int) -> None:
        """Set the threads a worker's context computes with from its next decode on."""
        ...

    def signal_group(self, sig: signal.Signals) -> None: ...

    def resident(self) -> int | None:
        """Its resident memory, if it can be read (a worker on another node: as its node
        agent last read it, router/cluster/remote_process.py)."""
        ...


class WorkerLauncher(Protocol):
    async def launch(self, argv: Sequence[str], env: Mapping[str, str]) -> ChildProcess: ...


class _Subprocess:
    def __init__(self, process: Process) -> None:
        self._process = process
        self.pid = process.pid

    async def pump(self, on_line: Callable[[ChildLine], None]) -> int:
        async def drain(stream: ByteReceiveStream | None) -> None:
            if stream is None:
                return
            splitter = LineSplitter()
            async for chunk in stream:
                for line in splitter.feed(chunk):
                    on_line(parse_line(line))
            for line in splitter.flush():
                on_line(parse_line(line))

        async with anyio.create_task_group() as group:
            group.start_soon(drain, self._process.stdout)
            group.start_soon(drain, self._process.stderr)
        code = await self._process.wait()
        await self._process.aclose()
        return code

    async def send_exit(self) -> None:
        await self._send(EXIT_COMMAND + b"\n")

    async def send_load(self, argv: Sequence[str], key: str) -> None:
        await self._send(encode_load(list(argv), key))

    async def send_release(self) -> None:
        await self._send(RELEASE_COMMAND + b"\n")

    async def send_threads(self, threads: int, threads_batch: int) -> None:
        await self._send(encode_threads(threads, threads_batch))

    async def _send(self, line: bytes) -> None:
        stdin = self._process.stdin
        if stdin is None:
            return
        # Already gone: the reaper reports it.
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await stdin.send(line)

    def signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, sig)

    def resident(self) -> int | None:
        return process_rss(self.pid)


def process_rss(pid: int) -> int | None:
    """A process's resident set size, if it can be read."""
    try:
        return int(psutil.Process(pid).memory_info().rss)
    except psutil.Error:  # exited since the status check, or not ours to read
        return None


class SubprocessLauncher:
    async def launch(self, argv: Sequence[str], env: Mapping[str, str]) -> ChildProcess:
        process = await anyio.open_process(
            list(argv),
            env=dict(env),
            start_new_session=True,  # own group: killpg reaches it all
        )
        return _Subprocess(process)


def worker_argv(entry: CatalogueEntry) -> list[str]:
    # Workers serve loopback only, to the router only (their key is in their environment, never
    # here: a command line is world-readable), and to no web page (docs/protocol.md §8).
    projector = ["--mmproj", str(entry.mmproj)] if entry.mmproj is not None else []
    tags = ["--tags", ",".join(entry.tags)] if entry.tags else []
    # An embedding model answers embeddings without a flag (its options may still say no).
    embeds = "embeddings" not in dict(entry.options) and declares_pooling(entry.path)
    return [
        *WORKER_COMMAND, "--model", str(entry.path), "--alias", entry.name,
        *projector, *tags, "--host", "127.0.0.1", "--port", "0", "--cors-origins", NO_CORS,
        *(["--embeddings"] if embeds else []), *entry.worker_args(),
    ]  # fmt: skip
