"""How the router listens: TLS with ``--ssl-key-file``/``--ssl-cert-file``, ``--reuse-port``."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from router.cli.main import parse_serve_args
from tests.support.router_process import running_router
from tests.support.tls import self_signed


def test_the_router_answers_https_with_the_given_certificate(tmp_path: Path) -> None:
    key, cert = self_signed(tmp_path)
    (tmp_path / "models").mkdir()
    args = ["--models-dir", str(tmp_path / "models")]
    args += ["--ssl-key-file", str(key), "--ssl-cert-file", str(cert)]
    trusting = ssl.create_default_context(cafile=str(cert))
    with running_router(args, verify=trusting) as router:
        assert router.url.startswith("https://127.0.0.1:")
        assert router.client.get("/health").json() == {"status": "ok"}
        with pytest.raises(httpx.TransportError):
            httpx.get(router.url.replace("https://", "http://") + "/health")


def test_a_key_without_its_certificate_or_a_bad_pair_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, cert = self_signed(tmp_path)
    with pytest.raises(SystemExit):
        parse_serve_args(["--ssl-key-file", str(key)])
    assert "--ssl-key-file and --ssl-cert-file go together" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_serve_args(["--ssl-key-file", str(cert), "--ssl-cert-file", str(key)])
    assert "--ssl-cert-file" in capsys.readouterr().err


def _bind_beside(port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen()
    finally:
        sock.close()


@pytest.mark.parametrize("reuse_port", [True, False])
def test_reuse_port_lets_another_process_listen_on_the_port(
    tmp_path: Path, reuse_port: bool
) -> None:
    (tmp_path / "models").mkdir()
    args = ["--models-dir", str(tmp_path / "models")] + (["--reuse-port"] if reuse_port else [])
    with running_router(args) as router:
        port = urlsplit(router.url).port
        assert port is not None
        if reuse_port:
            _bind_beside(port)
        else:
            with pytest.raises(OSError, match="in use"):
                _bind_beside(port)
