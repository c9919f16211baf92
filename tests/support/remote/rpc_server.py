"""A real ``corral rpc-server`` on loopback, for tests of workers that offload to it."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from worker.rpc.endpoints import Endpoint
from worker.rpc.handshake import RpcServerUnavailable, say_hello

__all__ = ["RpcServer", "closed_port", "corral_command", "rpc_server"]

_STARTUP_SECONDS = 60.0


def corral_command(*args: str) -> list[str]:
    """``corral ARGS`` from this checkout."""
    return [sys.executable, "-m", "router", *args]


def closed_port() -> int:
    """A loopback port nothing listens on (just released by the kernel's pick)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@dataclass
class RpcServer:
    process: subprocess.Popen[bytes]
    endpoint: Endpoint

    def stop(self) -> int:
        """SIGTERM, as systemd stops it; its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)


def _wait_until_answering(server: RpcServer) -> None:
    # ggml's server binds inside its C loop and says nothing once it listens, so readiness is
    # its first HELLO answer; between two refused connections the wait is on the process, which
    # ends it early if the server exits instead.
    deadline = time.monotonic() + _STARTUP_SECONDS
    while True:
        try:
            say_hello(server.endpoint, timeout=5)
            return
        except RpcServerUnavailable:
            if time.monotonic() > deadline:
                raise
        try:
            code = server.process.wait(timeout=0.05)
        except subprocess.TimeoutExpired:
            continue
        raise AssertionError(f"rpc-server exited with {code} before answering")


@contextmanager
def rpc_server(*args: str) -> Iterator[RpcServer]:
    """``corral rpc-server --port FREE ARGS`` on 127.0.0.1, answering HELLO."""
    port = closed_port()
    process = subprocess.Popen(
        corral_command("rpc-server", "--port", str(port), *args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    server = RpcServer(process, Endpoint("127.0.0.1", port))
    try:
        _wait_until_answering(server)
        yield server
    finally:
        server.stop()
        if process.stderr is not None:
            process.stderr.close()
