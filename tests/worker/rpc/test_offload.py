"""A worker offloading its layers to a real ``corral rpc-server`` on loopback (``--rpc``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from corral.children.protocol import EXIT_FAILED
from tests.support.remote.rpc_server import RpcServer, closed_port, rpc_server
from tests.support.worker_process import WorkerProcess, worker

# The tiny model has two blocks; llama.cpp counts the output layer too.
_LAYERS = 3
_PROMPT = {"prompt": "once upon a time the little model", "n_predict": 24, "temperature": 0}


@pytest.fixture(scope="module")
def server() -> Any:
    with rpc_server() as running:
        yield running


@pytest.fixture
def alpha(models_dir: Path) -> Path:
    return models_dir / "alpha.gguf"


def _tokens(child: WorkerProcess) -> list[int]:
    reply = httpx.post(
        f"{child.url}/completion", json={**_PROMPT, "return_tokens": True}, timeout=120
    )
    assert reply.status_code == 200, reply.text
    tokens: list[int] = reply.json()["tokens"]
    return tokens


def _devices(child: WorkerProcess) -> list[dict[str, Any]]:
    devices: list[dict[str, Any]] = child.states[-1].payload["meta"]["devices"]
    return devices


def test_offloaded_layers_give_the_local_tokens(alpha: Path, server: RpcServer) -> None:
    with worker(alpha) as local:
        expected = _tokens(local)
        [cpu] = _devices(local)
        assert (cpu["name"], cpu["layers"]) == ("CPU", _LAYERS)
    assert len(expected) == _PROMPT["n_predict"]
    # No -ngl: with --rpc every layer goes to the servers unless told otherwise.
    with worker(alpha, "--rpc", str(server.endpoint)) as remote:
        devices = _devices(remote)
        assert (devices[0]["name"], devices[0]["layers"]) == ("CPU", 0)  # the input layer
        assert len(devices) == 2
        assert devices[1]["name"].endswith(f"[{server.endpoint}]")
        assert devices[1]["layers"] == _LAYERS
        # The weights' bytes went with the layers; the token embeddings stayed.
        assert devices[1]["model_bytes"] > devices[0]["model_bytes"] > 0
        assert devices[1]["context_bytes"] > 0  # the KV cache follows its layers
        [gpu] = remote.states[-1].payload["gpu_devices"]
        assert gpu["name"] == devices[1]["name"]
        assert gpu["total"] >= gpu["free"] > 0
        assert _tokens(remote) == expected


def test_n_gpu_layers_splits_the_model_between_cpu_and_server(
    alpha: Path, server: RpcServer
) -> None:
    with worker(alpha, "--rpc", str(server.endpoint), "-ngl", "1") as remote:
        names = [device["name"] for device in _devices(remote)]
        assert [device["layers"] for device in _devices(remote)] == [_LAYERS - 1, 1]
        assert names[0] == "CPU"
        with worker(alpha) as local:
            assert _tokens(remote) == _tokens(local)


def test_a_sleeping_worker_wakes_onto_the_same_server(alpha: Path, server: RpcServer) -> None:
    # ggml keeps its connection open across the sleep; a second HELLO would wait behind it.
    with worker(alpha, "--rpc", str(server.endpoint), "--sleep-idle-seconds", "1") as remote:
        before = _tokens(remote)
        remote.read_until("sleeping")
        assert _tokens(remote) == before
        remote.read_until("ready")  # the wake-up's, sent before the answer


def _failed_load(alpha: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "worker", "--model", str(alpha), "--ctx-size", "256", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_dead_server_fails_the_load_with_the_reason(alpha: Path) -> None:
    port = closed_port()
    done = _failed_load(alpha, "--rpc", f"127.0.0.1:{port}")
    assert done.returncode == EXIT_FAILED
    assert "failed to load model" in done.stderr
    assert f"rpc-server 127.0.0.1:{port}: cannot connect: Connection refused" in done.stderr


def test_a_busy_server_fails_the_load_instead_of_waiting(alpha: Path, server: RpcServer) -> None:
    # ggml's server serves one client at a time: a second worker would wait forever for HELLO.
    with worker(alpha, "--rpc", str(server.endpoint)):
        done = _failed_load(alpha, "--rpc", str(server.endpoint))
    assert done.returncode == EXIT_FAILED
    assert "no HELLO answer within" in done.stderr
    assert "is another worker using it?" in done.stderr


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("127.0.0.1", "expected HOST:PORT"),
        ("127.0.0.1:0", "the port must be a number from 1 to 65535"),
        ("[::1]:50052", "ggml's RPC backend speaks IPv4 only"),
    ],
)
def test_a_malformed_server_list_is_refused_before_loading(
    alpha: Path, value: str, reason: str
) -> None:
    done = _failed_load(alpha, "--rpc", value)
    assert done.returncode == 2
    assert f"--rpc: '{value}': {reason}" in done.stderr
