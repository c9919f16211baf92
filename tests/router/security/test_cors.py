"""CORS as llama-server answers it (corral.http.cors): the policy, and a real router's answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from corral.http.cors import CorsPolicy
from tests.support.router_process import RouterProcess, running_router

PREFLIGHT = {
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization",
}


@pytest.mark.parametrize(
    ("origins", "origin", "allowed"),
    [
        (("*",), "https://any.example", "https://any.example"),  # as llama-server's default
        (("*",), None, "*"),
        (("localhost",), "http://127.0.0.1:3000", "http://127.0.0.1:3000"),
        (("localhost",), "http://[::1]", "http://[::1]"),
        (("localhost",), "http://localhost.evil.com", None),
        (("localhost",), None, None),
        (("https://app.example", "localhost"), "https://app.example", "https://app.example"),
        (("https://app.example",), "https://app.example.evil", None),
    ],
)
def test_which_origin_may_read(
    origins: tuple[str, ...], origin: str | None, allowed: str | None
) -> None:
    assert CorsPolicy(origins).allow_origin(origin) == allowed


@pytest.fixture(scope="module")
def loopback_only(models_dir: Path) -> Iterator[RouterProcess]:
    args = ["--models-dir", str(models_dir), "--api-key", "k", "--cors-origins", "localhost"]
    with running_router(args) as router:
        yield router


def test_a_preflight_is_200_on_any_path_and_needs_no_key(loopback_only: RouterProcess) -> None:
    origin = "http://localhost:8080"
    for path in ("/completions", "/no/such/route"):
        response = loopback_only.client.options(path, headers={"Origin": origin, **PREFLIGHT})
        assert response.status_code == 200
        assert response.content == b""
        assert response.headers["access-control-allow-origin"] == origin
        assert response.headers["access-control-allow-methods"] == "GET, POST, DELETE, OPTIONS"
        # The headers asked for, so a page may send its key (a "*" would not cover it).
        assert response.headers["access-control-allow-headers"] == "authorization"
        assert "access-control-allow-credentials" not in response.headers


def test_a_foreign_origin_is_answered_without_the_header(loopback_only: RouterProcess) -> None:
    # The preflight as llama-server answers it: 200, but nothing the browser lets the page use.
    headers = {"Origin": "http://localhost.evil.com"}
    preflight = loopback_only.client.options("/v1/models", headers={**headers, **PREFLIGHT})
    assert preflight.status_code == 200
    assert "access-control-allow-origin" not in preflight.headers
    # Unlike llama-server, the request itself is refused too, key or not (the Origin check:
    # tests/router/security/test_origins.py).
    response = loopback_only.client.get("/v1/models", headers={**headers, "X-Api-Key": "k"})
    assert response.status_code == 403
    assert "access-control-allow-origin" not in response.headers
