"""A ``python -m worker`` child for tests, read the way the router reads it (protocol lines on
stdout), for the worker's own tests and any other that needs a bare worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from corral.children.environment import ROUTER_PID_ENV
from corral.children.protocol import (
    EXIT_COMMAND,
    SPARE_STATE,
    LineSplitter,
    LogLine,
    StateMessage,
    encode_load,
    parse_line,
)

__all__ = ["WorkerProcess", "worker"]


class WorkerProcess:
    """A worker child, read the way the router reads it.

    With ``model`` None it starts as a spare (``--spare``) and waits until it is warm;
    :meth:`hand_over` then gives it its model.
    """

    def __init__(
        self,
        model: Path | None,
        *,
        as_child: bool,
        args: tuple[str, ...] = (),
        extra_env: dict[str, str] | None = None,
        log: Path | None = None,
    ) -> None:
        """``log``: a file that takes the worker's log (stderr); none: the log is dropped."""
        # Saved KV caches go to this worker's own folder unless the test names one.
        self._scratch = tempfile.TemporaryDirectory(prefix="corral-worker-")
        env = {**os.environ, "XDG_CACHE_HOME": self._scratch.name, **(extra_env or {})}
        env.pop(ROUTER_PID_ENV, None)
        if as_child:
            env[ROUTER_PID_ENV] = str(os.getpid())
        flags = ["--spare"] if model is None else self.model_flags(model, *args)
        stderr: IO[bytes] | int = subprocess.DEVNULL if log is None else log.open("wb")
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "worker", *flags],
                stdin=subprocess.PIPE if as_child else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=env,
                start_new_session=True,
            )
        finally:
            if not isinstance(stderr, int):
                stderr.close()  # the child has its own copy
        self.states: list[StateMessage] = []
        self.stray_lines: list[str] = []
        self._splitter = LineSplitter()
        self._lines: deque[bytes] = deque()  # read, not yet looked at
        self.url = ""
        if model is None:
            self.read_until(SPARE_STATE)
        else:
            self._serving()

    @staticmethod
    def model_flags(model: Path, *args: str) -> list[str]:
        return ["--model", str(model), "--ctx-size", "256", *args]

    def _serving(self) -> None:
        try:
            ready = self.read_until("ready")
        except BaseException:
            self.close()  # nothing of a worker that never got ready outlives the test
            raise
        self.url = f"http://127.0.0.1:{ready.payload['port']}"

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line)
        self.process.stdin.flush()

    def hand_over(self, model: Path, *args: str, key: str = "") -> None:
        """A spare's load command, as the router sends it (with the worker key ``key``, if
        any); returns once the model serves."""
        self.send(encode_load(self.model_flags(model, *args), key))
        self._serving()

    def read_until(self, state: str) -> StateMessage:
        """The next ``state`` line; the lines read after it wait for the next call."""
        assert self.process.stdout is not None
        while True:
            while self._lines:
                message = parse_line(self._lines.popleft())
                if isinstance(message, StateMessage):
                    self.states.append(message)
                    if message.state == state:
                        return message
                elif message != LogLine(""):
                    self.stray_lines.append(str(message))
            chunk = os.read(self.process.stdout.fileno(), 65536)
            if not chunk:
                raise AssertionError(f"worker closed stdout before reporting {state!r}")
            self._lines.extend(self._splitter.feed(chunk))

    def stop(self, timeout: float = 60) -> int:
        """Ask it to stop as the router does (the exit command) and wait for its exit code."""
        assert self.process.stdin is not None
        self.process.stdin.write(EXIT_COMMAND + b"\n")
        self.process.stdin.flush()
        return self.process.wait(timeout=timeout)

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()
        self._scratch.cleanup()


@contextmanager
def worker(
    model: Path,
    *args: str,
    as_child: bool = True,
    env: dict[str, str] | None = None,
    log: Path | None = None,
) -> Iterator[WorkerProcess]:
    """A worker for ``model``; ``args`` are extra flags (later ones win over the defaults)."""
    process = WorkerProcess(model, as_child=as_child, args=args, extra_env=env, log=log)
    try:
        yield process
    finally:
        process.close()
