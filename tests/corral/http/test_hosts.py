"""The Host check's names (corral.http.hosts); a real router's answers are in
tests/router/security/test_dns_rebinding.py."""

from __future__ import annotations

import socket

import pytest

from corral.http.hosts import is_loopback_name, listens_on_loopback_only


@pytest.mark.parametrize("name", ["localhost", "app.localhost", "127.0.0.1", "127.1.2.3", "::1"])
def test_loopback_names(name: str) -> None:
    assert is_loopback_name(name)


@pytest.mark.parametrize(
    "name", ["evil.example", "localhost.evil.example", "0.0.0.0", "10.0.0.1", "::", "", "x"]
)
def test_other_names(name: str) -> None:
    assert not is_loopback_name(name)


def test_which_sockets_listen_on_loopback_only() -> None:
    with socket.socket() as loopback, socket.socket() as everywhere:
        loopback.bind(("127.0.0.1", 0))
        everywhere.bind(("0.0.0.0", 0))
        assert listens_on_loopback_only([loopback])
        assert not listens_on_loopback_only([loopback, everywhere])
