"""``python -m worker`` as a process: protocol on stdout, readiness, and the lifeline."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.worker_process import worker


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
        assert httpx.get(f"{child.url}/health").json() == {
            "status": "ok",
            "engine_busy_seconds": 0.0,
        }


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
    with worker(alpha, "--sleep-idle-seconds", "1", "--metrics") as child:
        asleep = child.read_until("sleeping")
        assert asleep.payload == {}
        assert httpx.get(f"{child.url}/props").json()["is_sleeping"] is True
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


def test_the_body_limit_comes_from_the_environment(alpha: Path) -> None:
    # The router passes its --max-body on, so a worker never refuses what the router accepted.
    body = b'{"content": "hi"' + b" " * 2048 + b"}"
    with worker(alpha, env={"CORRAL_MAX_BODY": "1K"}) as child:
        refused = httpx.post(f"{child.url}/tokenize", content=body)
        small = httpx.post(f"{child.url}/tokenize", json={"content": "hi"})
    assert refused.status_code == 413
    assert refused.json()["error"]["code"] == 413
    assert small.status_code == 200


def test_it_listens_on_every_address_of_host(alpha: Path) -> None:
    # As llama-server's --host: a comma list of addresses, all on one port.
    with worker(alpha, "--host", "127.0.0.1,::1") as child:
        ready = child.states[-1].payload
        assert ready["host"] == "127.0.0.1"
        for base in ("http://127.0.0.1", "http://[::1]"):
            assert httpx.get(f"{base}:{ready['port']}/health", timeout=30).status_code == 200
