"""The Host check of a real router (corral/http/hosts.py, wired in router/server.py).

A rebinding page at ``http://evil.example:PORT`` reaches the router on 127.0.0.1 with its own
name in ``Host``, and to the browser every such request is same-origin: the Host check is what
stops it.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.router_process import RouterProcess, running_router


def _port(router: RouterProcess) -> int:
    return httpx.URL(router.url).port or 80


def _as(
    router: RouterProcess,
    host: str,
    method: str = "GET",
    path: str = "/v1/models",
    body: dict[str, str] | None = None,
) -> httpx.Response:
    """A request as a browser on a page of ``host`` sends it."""
    return router.client.request(method, path, headers={"Host": host}, json=body)


@pytest.fixture(scope="module")
def on_loopback(models_dir: Path) -> Iterator[RouterProcess]:
    args = ["--models-dir", str(models_dir), "--ctx-size", "256"]
    with running_router([*args, "--allowed-hosts", "llm.example"]) as router:
        yield router


def test_a_rebinding_name_gets_403_and_nothing_runs(on_loopback: RouterProcess) -> None:
    host = f"evil.example:{_port(on_loopback)}"
    listed = _as(on_loopback, host)
    assert listed.status_code == 403
    assert listed.json()["error"]["type"] == "permission_error"
    # Same-origin to the browser (its Origin would be http://evil.example:PORT too).
    loaded = _as(on_loopback, host, "POST", "/models/load", {"model": "alpha"})
    assert loaded.status_code == 403
    assert on_loopback.models()["alpha"]["status"]["value"] == "unloaded"
    on_loopback.wait_for_log("refused: a Host that is not this server's", host="evil.example")


@pytest.mark.parametrize(
    "name", ["localhost", "127.0.0.1", "127.0.0.2", "[::1]", "app.localhost", "LocalHost"]
)
def test_loopback_names_are_served(on_loopback: RouterProcess, name: str) -> None:
    assert _as(on_loopback, f"{name}:{_port(on_loopback)}").status_code == 200
    assert _as(on_loopback, name).status_code == 200  # no port


def test_allowed_hosts_adds_names(on_loopback: RouterProcess) -> None:
    assert _as(on_loopback, f"llm.example:{_port(on_loopback)}").status_code == 200
    assert _as(on_loopback, "llm.example.evil").status_code == 403


def test_a_request_without_host_is_served(on_loopback: RouterProcess) -> None:
    # HTTP/1.0 needs no Host, and no browser sends a request without one.
    with socket.create_connection(("127.0.0.1", _port(on_loopback))) as sock:
        sock.sendall(b"GET /health HTTP/1.0\r\n\r\n")
        head = sock.recv(1024)
    assert head.startswith(b"HTTP/1.1 200"), head


def test_a_star_turns_the_check_off(models_dir: Path) -> None:
    with running_router(["--models-dir", str(models_dir), "--allowed-hosts", "*"]) as router:
        assert _as(router, "evil.example").status_code == 200


def test_beyond_loopback_the_check_is_off_unless_names_are_given(models_dir: Path) -> None:
    # A LAN server is reached by names only its user knows (a key guards it, not the name).
    args = ["--models-dir", str(models_dir), "--host", "0.0.0.0", "--api-key", "k"]
    auth = {"Authorization": "Bearer k"}
    with running_router(args) as router:
        answer = router.client.get("/v1/models", headers={"Host": "gpu-box.lan", **auth})
        assert answer.status_code == 200
    with running_router([*args, "--allowed-hosts", "gpu-box.lan"]) as router:
        served = router.client.get("/v1/models", headers={"Host": "gpu-box.lan", **auth})
        assert served.status_code == 200
        refused = router.client.get("/v1/models", headers={"Host": "evil.example", **auth})
        assert refused.status_code == 403
