"""``python -m worker --spare``: warm without a model, then handed one (docs/protocol.md §1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from corral.children.protocol import (
    EXIT_COMMAND,
    EXIT_FAILED,
    EXIT_STOPPED,
    RELEASE_COMMAND,
    SPARE_STATE,
)
from tests.support.worker_process import WorkerProcess


@pytest.fixture
def spare() -> WorkerProcess:
    return WorkerProcess(None, as_child=True)


def _thread_niceness(pid: int) -> dict[str, int]:
    """Each live thread's niceness, by thread name (field 19 of /proc/PID/task/TID/stat)."""
    niceness = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        niceness[f"{name}/{tid}"] = int(stat[stat.rindex(")") + 2 :].split()[16])
    return niceness


def test_a_spare_serves_the_model_it_is_handed(spare: WorkerProcess, models_dir: Path) -> None:
    try:
        assert [message.state for message in spare.states] == [SPARE_STATE]
        # Without the KV disk tier, whose writer thread runs at nice 10 on purpose.
        spare.hand_over(models_dir / "alpha.gguf", "--alias", "first", "--no-kv-persist")
        states = [message.state for message in spare.states]
        assert states[0] == SPARE_STATE
        assert states[-1] == "ready"
        assert set(states[1:-1]) == {"loading"}
        assert spare.states[-1].payload["id"] == "first"
        reply = httpx.post(
            f"{spare.url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3},
        )
        assert reply.status_code == 200, reply.text
        assert reply.json()["model"] == "first"
        # Only the warm-up ran at a lower priority: every thread serving now runs at ours.
        assert set(_thread_niceness(spare.process.pid).values()) == {os.nice(0)}
        spare.send(EXIT_COMMAND + b"\n")  # the exit command now stops the worker it became
        assert spare.process.wait(timeout=30) == EXIT_STOPPED
    finally:
        spare.close()


def test_a_released_worker_is_a_spare_again_and_serves_its_next_model(
    spare: WorkerProcess, models_dir: Path
) -> None:
    chat = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}
    try:
        spare.hand_over(models_dir / "alpha.gguf", "--alias", "first")
        first_url = spare.url
        assert httpx.post(f"{first_url}/v1/chat/completions", json=chat).json()["model"] == "first"
        spare.send(RELEASE_COMMAND + b"\n")
        spare.read_until(SPARE_STATE)  # the model is closed and its port with it
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{first_url}/health")
        assert spare.process.poll() is None
        spare.hand_over(models_dir / "beta.gguf", "--alias", "second")
        assert spare.states[-1].payload["id"] == "second"
        reply = httpx.post(f"{spare.url}/v1/chat/completions", json=chat)
        assert reply.status_code == 200, reply.text
        assert reply.json()["model"] == "second"
        spare.send(EXIT_COMMAND + b"\n")
        assert spare.process.wait(timeout=30) == EXIT_STOPPED
    finally:
        spare.close()


def test_each_model_a_spare_is_handed_answers_only_the_key_of_its_load_command(
    spare: WorkerProcess, models_dir: Path
) -> None:
    # docs/protocol.md §8: a spare's environment has no key; each load command brings one.
    chat = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}

    def status(key: str | None) -> int:
        headers = {} if key is None else {"X-Corral-Worker-Key": key}
        url = f"{spare.url}/v1/chat/completions"
        return httpx.post(url, json=chat, headers=headers, timeout=60).status_code

    try:
        spare.hand_over(models_dir / "alpha.gguf", "--alias", "first", key="first-key")
        assert [status(None), status("second-key"), status("first-key")] == [401, 401, 200]
        spare.send(RELEASE_COMMAND + b"\n")
        spare.read_until(SPARE_STATE)
        spare.hand_over(models_dir / "beta.gguf", "--alias", "second", key="second-key")
        assert [status(None), status("first-key"), status("second-key")] == [401, 401, 200]
    finally:
        spare.close()


def test_an_exit_command_before_any_model_stops_the_spare(spare: WorkerProcess) -> None:
    try:
        spare.send(EXIT_COMMAND + b"\n")
        assert spare.process.wait(timeout=30) == EXIT_STOPPED
    finally:
        spare.close()


def test_a_spare_dies_with_its_router(spare: WorkerProcess) -> None:
    try:
        assert spare.process.stdin is not None
        spare.process.stdin.close()  # what the router's death looks like from here
        assert spare.process.wait(timeout=30) != EXIT_STOPPED
    finally:
        spare.process.stdin = None
        spare.close()


def test_a_spare_needs_a_router() -> None:
    env = {k: v for k, v in os.environ.items() if k != "CORRAL_ROUTER_PID"}
    done = subprocess.run(
        [sys.executable, "-m", "worker", "--spare"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == EXIT_FAILED
    assert b"started by a router" in done.stderr
