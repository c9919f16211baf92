"""``corral rpc-server``: ggml's RPC server in a process of its own, behind Corral's checks."""

from __future__ import annotations

import signal
import socket
import subprocess

import pytest

from tests.support.remote.rpc_server import corral_command, rpc_server
from worker.rpc.handshake import PROTOCOL_MAJOR, RpcServerUnavailable, say_hello


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        corral_command("rpc-server", *args),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.7"])
def test_a_non_loopback_address_needs_allow_remote(host: str) -> None:
    done = _run("--host", host, "--port", "50052")
    assert done.returncode == 2
    assert f"--host {host} is reachable from other machines" in done.stderr
    assert "add --allow-remote" in done.stderr


def test_allow_remote_passes_the_check_and_a_taken_port_is_refused() -> None:
    # Taken on loopback, which 0.0.0.0 includes: nothing listens beyond this machine.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = _run("--host", "0.0.0.0", "--port", str(port), "--allow-remote")
    assert done.returncode == 1
    assert f"cannot listen on 0.0.0.0:{port}: Address already in use" in done.stderr


def test_a_host_name_is_refused_with_what_ggml_needs() -> None:
    done = _run("--host", "localhost")
    assert done.returncode == 2
    assert "expected an IPv4 address such as 127.0.0.1" in done.stderr


def test_it_serves_warns_and_stops_cleanly_on_sigterm() -> None:
    with rpc_server("--threads", "1") as server:
        assert say_hello(server.endpoint, timeout=10)[0] == PROTOCOL_MAJOR
        assert server.stop() == 0
        assert server.process.stderr is not None
        log = server.process.stderr.read().decode()
    assert "the RPC protocol has no authentication" in log
    # On loopback it is open to every local user: the warning says so (docs/security.md).
    assert "every local user and process can use these devices" in log
    assert "rpc server stopping" in log
    with pytest.raises(RpcServerUnavailable, match="Connection refused"):
        say_hello(server.endpoint, timeout=10)


def test_mem_is_accepted_with_a_warning_and_a_bad_size_refused() -> None:
    with rpc_server("--threads", "1", "--mem", "2G") as server:
        assert say_hello(server.endpoint, timeout=10)[0] == PROTOCOL_MAJOR
        assert server.stop() == 0
        assert server.process.stderr is not None
        log = server.process.stderr.read().decode()
    assert "--mem has no effect" in log
    done = _run("--mem", "lots")
    assert done.returncode == 2
    assert "--mem: expected a size such as 512M or 8G, got 'lots'" in done.stderr


def test_sigint_stops_it_too() -> None:
    with rpc_server() as server:
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(timeout=30) == 0
