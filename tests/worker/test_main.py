"""``python -m worker`` as a process: protocol on stdout, readiness, and the lifeline."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from corral.children.environment import ROUTER_PID_ENV
from corral.children.protocol import LineSplitter, LogLine, StateMessage, parse_line


class WorkerProcess:
    """A worker child, read the way the router reads it."""

    def __init__(
        self,
        model: Path,
        *,
        as_child: bool,
        args: tuple[str, ...] = (),
        extra_env: dict[str, str] | None = None,
    ) -> None:
        env = {**os.environ, **(extra_env or {})}
        env.pop(ROUTER_PID_ENV, None)
        if as_child:
            env[ROUTER_PID_ENV] = str(os.getpid())
        self.process = subprocess.Popen(
            [sys.executable, "-m", "worker", "--model", str(model), "--ctx-size", "256", *args],
            stdin=subprocess.PIPE if as_child else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        self.states: list[StateMessage] = []
        self.stray_lines: list[str] = []
        self._splitter = LineSplitter()
        ready = self.read_until("ready")
        self.url = f"http://127.0.0.1:{ready.payload['port']}"

    def read_until(self, state: str) -> StateMessage:
        assert self.process.stdout is not None
        while chunk := os.read(self.process.stdout.fileno(), 65536):
            for line in self._splitter.feed(chunk):
                message = parse_line(line)
                if isinstance(message, StateMessage):
                    self.states.append(message)
                    if message.state == state:
                        return message
                elif message != LogLine(""):
                    self.stray_lines.append(str(message))
        raise AssertionError(f"worker closed stdout before reporting {state!r}")

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


@contextmanager
def worker(
    model: Path, *args: str, as_child: bool = True, env: dict[str, str] | None = None
) -> Iterator[WorkerProcess]:
    """A worker for ``model``; ``args`` are extra flags (later ones win over the defaults)."""
    process = WorkerProcess(model, as_child=as_child, args=args, extra_env=env)
    try:
        yield process
    finally:
        process.close()


@pytest.fixture
def alpha(models_dir: Path) -> Path:
    return models_dir / "alpha.gguf"


def test_reports_loading_then_ready_with_model_info(alpha: Path) -> None:
    with worker(alpha) as child:
        states = [message.state for message in child.states]
        assert states[-1] == "ready"
        assert set(states[:-1]) == {"loading"}
        values = [message.payload["value"] for message in child.states[:-1]]
        assert values[0] == 0.0
        assert values[-1] == 1.0
        assert values == sorted(values)
        ready = child.states[-1].payload
        assert ready["id"] == "alpha"
        assert ready["meta"]["n_ctx"] == 256
        assert ready["host"] == "127.0.0.1"
        assert httpx.get(f"{child.url}/health").json() == {"status": "ok"}


def test_stdout_carries_only_protocol_lines(alpha: Path) -> None:
    with worker(alpha) as child:
        reply = httpx.post(
            f"{child.url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3},
        )
        assert reply.status_code == 200
        assert child.process.stdin is not None
        child.process.stdin.write(b"cmd_router_to_child:exit\n")
        child.process.stdin.flush()
        with pytest.raises(AssertionError, match="closed stdout"):
            child.read_until("never")
        assert child.stray_lines == []


def test_exit_command_stops_gracefully(alpha: Path) -> None:
    with worker(alpha) as child:
        assert child.process.stdin is not None
        child.process.stdin.write(b"cmd_router_to_child:exit\n")
        child.process.stdin.flush()
        assert child.process.wait(timeout=30) == 0


def test_stdin_eof_means_the_router_is_gone(alpha: Path) -> None:
    with worker(alpha) as child:
        assert child.process.stdin is not None
        child.process.stdin.close()
        # Killed at once, not a graceful exit: nobody is left to answer.
        assert child.process.wait(timeout=30) == -signal.SIGKILL


def test_standalone_worker_ignores_a_closed_stdin(alpha: Path) -> None:
    with worker(alpha, as_child=False) as child:
        # stdin is /dev/null (EOF at once) and yet the worker keeps serving.
        response = httpx.post(f"{child.url}/tokenize", json={"content": "the"})
        assert response.json()["tokens"]
        assert child.process.poll() is None


def test_missing_model_file_exits_with_an_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "worker", "--model", str(tmp_path / "none.gguf")],
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert b"model file not found" in result.stderr
    assert result.stdout == b""


def _nothing_pending(fd: int) -> bool:
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 65536) == b""
    except BlockingIOError:  # nothing written since the last read
        return True
    finally:
        os.set_blocking(fd, True)


def test_idle_worker_sleeps_and_wakes_on_demand(alpha: Path) -> None:
    with worker(alpha, "--sleep-idle-seconds", "1") as child:
        asleep = child.read_until("sleeping")
        assert asleep.payload == {}
        # Snapshots must not wake it: any wake-up would be reported before the answer.
        for path in ("/health", "/props", "/v1/models", "/metrics", "/slots"):
            assert httpx.get(f"{child.url}{path}").status_code == 200
        assert child.process.stdout is not None
        assert _nothing_pending(child.process.stdout.fileno())

        reply = httpx.post(
            f"{child.url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3},
            timeout=60,
        )
        assert reply.status_code == 200
        woke = child.read_until("ready")
        assert woke.payload == {}  # upstream's wake-up: an empty ready
        assert child.states[-2].state == "loading"
