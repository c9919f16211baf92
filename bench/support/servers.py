"""The servers the benchmarks compare, started the same way for every benchmark.

Corral's worker alone (``python -m worker``), Corral's router (``corral serve``), and a
``llama-server`` binary, single-model or in router mode: each yields its URL once it answers,
and its process so that its memory can be read. Shared by ``bench.engine_vs_llama_server`` and
``bench.swap`` and ``bench.team``.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx

from corral.children.protocol import LineSplitter, StateMessage, parse_line
from worker.rpc.endpoints import Endpoint
from worker.rpc.handshake import RpcServerUnavailable, say_hello

__all__ = [
    "DEFAULT_MODEL",
    "REPO",
    "Server",
    "corral_router",
    "corral_worker",
    "llama_server",
    "log",
    "rpc_server",
]

REPO = Path(__file__).resolve().parents[2]
DEFAULT_MODEL = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]


def _free_port() -> int:
    # llama-server cannot report a port it picked, so the benchmark picks one for it.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_healthy(url: str, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not become healthy")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def corral_worker(model: Path, flags: Sequence[str] = ()) -> Iterator[Server]:
    """A worker on a port it chose itself, read from its ``ready`` state line."""
    command = [sys.executable, "-m", "worker", "--model", str(model), "--port", "0", *flags]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO)
    try:
        assert process.stdout is not None
        splitter = LineSplitter()
        while chunk := os.read(process.stdout.fileno(), 65536):
            for line in splitter.feed(chunk):
                message = parse_line(line)
                if isinstance(message, StateMessage) and message.state == "ready":
                    yield Server(f"http://127.0.0.1:{message.payload['port']}", process)
                    return
        raise RuntimeError("the Corral worker exited before it was ready")
    finally:
        _stop(process)


@contextmanager
def _serving(
    command: Sequence[str], port: int, what: str, log_path: Path | None = None
) -> Iterator[Server]:
    """A server told to listen on ``port``, once its ``/health`` says ok; its output goes to
    ``log_path`` (both streams), or nowhere."""
    with contextlib.ExitStack() as stack:
        output: IO[bytes] | int = subprocess.DEVNULL
        if log_path is not None:
            output = stack.enter_context(log_path.open("wb"))
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_healthy(url, process, what)
            yield Server(url, process)
        finally:
            _stop(process)


@contextmanager
def corral_router(flags: Sequence[str], log_path: Path | None = None) -> Iterator[Server]:
    """``corral serve`` with these flags, its log discarded unless ``log_path`` is given."""
    port = _free_port()
    command = [sys.executable, "-m", "router", "serve", "--port", str(port), *flags]
    with _serving(command, port, "corral serve", log_path) as server:
        yield server


@contextmanager
def llama_server(
    binary: Path, flags: Sequence[str], log_path: Path | None = None
) -> Iterator[Server]:
    """``llama-server`` with these flags (``-m MODEL …`` or ``--models-dir DIR …``)."""
    port = _free_port()
    command = [str(binary), "--port", str(port), "--no-webui", *flags]
    with _serving(command, port, "llama-server", log_path) as server:
        yield server


@contextmanager
def rpc_server(threads: int) -> Iterator[str]:
    """``corral rpc-server`` on loopback; yields its ``HOST:PORT`` once it answers HELLO."""
    endpoint = Endpoint("127.0.0.1", _free_port())
    command = [sys.executable, "-m", "router", "rpc-server", "--port", str(endpoint.port)]
    process = subprocess.Popen(
        [*command, "--threads", str(threads)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                say_hello(endpoint, timeout=5)
                break
            except RpcServerUnavailable:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield str(endpoint)
    finally:
        _stop(process)
