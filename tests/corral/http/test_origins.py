"""The Origin check's rule (corral.http.origins): which page may do what, by --cors-origins.

Each case is a request as the ASGI server hands it over; the real routers and workers are
tested over HTTP in tests/router/security/test_origins.py and tests/worker/host/test_access.py.
"""

from __future__ import annotations

from typing import cast

import pytest
from litestar.types import Scope

from corral.http.cors import CorsPolicy
from corral.http.origins import page_refusal

EVIL = "https://evil.example"


def _scope(origin: str | None, host: str = "127.0.0.1:8080", scheme: str = "http") -> Scope:
    headers = [(b"host", host.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    return cast(Scope, {"type": "http", "scheme": scheme, "headers": headers})


@pytest.mark.parametrize(
    ("origins", "origin", "management", "refused"),
    [
        # No Origin: curl, the SDKs, navigations.
        (("localhost",), None, True, False),
        # `*` covers inference for every page, as llama-server; never management.
        (("*",), EVIL, False, False),
        (("*",), EVIL, True, True),
        (("*",), "null", True, True),  # a sandboxed frame, a file:// page
        # Named origins get everything.
        (("*", "https://app.example"), "https://app.example", True, False),
        (("localhost",), "http://localhost:3000", True, False),
        (("localhost",), "http://[::1]:3000", True, False),
        # An origin the list does not cover gets nothing at all.
        (("localhost",), EVIL, False, True),
        (("localhost",), "http://localhost.evil.example", False, True),
        (("https://app.example",), "https://app.example.evil", False, True),
        # The server's own origin (its Web UI) whatever the list says.
        (("localhost",), "http://127.0.0.1:8080", True, False),
        (("https://app.example",), "http://127.0.0.1:8080", True, False),
        # ... but only the same scheme, name and port.
        (("https://app.example",), "https://127.0.0.1:8080", True, True),
        (("https://app.example",), "http://127.0.0.1:8081", True, True),
        (("https://app.example",), "http://127.0.0.1", True, True),
    ],
)
def test_which_page_may_do_what(
    origins: tuple[str, ...], origin: str | None, management: bool, refused: bool
) -> None:
    error = page_refusal(CorsPolicy(origins), _scope(origin), management=management)
    assert (error is not None) == refused
    if error is not None:
        assert (error.status, error.type) == (403, "permission_error")
        assert str(origin) in error.message


@pytest.mark.parametrize(
    ("origin", "host", "scheme"),
    [
        ("http://localhost", "LOCALHOST:80", "http"),  # default ports, any case
        ("https://llm.example", "llm.example", "https"),  # behind a TLS proxy (X-Forwarded-Proto)
        ("http://[::1]:8080", "[::1]:8080", "http"),
    ],
)
def test_the_own_origin_is_the_request_s_scheme_and_host(
    origin: str, host: str, scheme: str
) -> None:
    policy = CorsPolicy(["https://app.example"])
    assert page_refusal(policy, _scope(origin, host, scheme), management=True) is None


def test_without_a_host_no_origin_is_the_server_s_own() -> None:
    scope = cast(Scope, {"type": "http", "scheme": "http", "headers": [(b"origin", b"http://x")]})
    assert page_refusal(CorsPolicy(["*"]), scope, management=True) is not None
