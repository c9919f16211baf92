"""CORS as llama-server answers it (``server-http.cpp``), around a whole app: the router's, or a
worker's when it runs alone (docs/serving.md).

See docs/protocol.md §8.

- Every ``OPTIONS`` request is a preflight, answered here with 200 and an empty body, before
  routing and before the key check (browsers send no credentials on a preflight).
- ``Access-Control-Allow-Origin`` goes on every answer, 401s and 404s included, when the
  request's ``Origin`` is allowed: ``*`` (the default) allows any origin, ``localhost`` the
  http(s) origins on localhost, 127.0.0.1 and [::1] (any port), other entries themselves.
  As llama-server's default, ``*`` answers with the request's own ``Origin`` (``*`` for a
  request without one); without credentials that grants exactly what ``*`` would.
- A disallowed origin gets no header (a preflight still 200), as llama-server does, so the
  browser refuses the page access. That only hides answers: whether a request from a page may
  run at all is :mod:`corral.http.origins`' decision, made with :meth:`CorsPolicy.names`.

Unlike llama-server, credentials are never allowed (no ``Access-Control-Allow-Credentials``):
keys travel in headers a page sets itself, and a cookie a proxy in front of Corral set must not
become usable from any web page.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from litestar.enums import ScopeType
from litestar.types import (
    ASGIApp,
    HTTPResponseBodyEvent,
    HTTPResponseStartEvent,
    Message,
    Receive,
    Scope,
    Send,
)

from corral.http.scope_headers import scope_header

__all__ = ["CORS_ALLOWED_HEADERS", "CORS_ALLOWED_METHODS", "NO_CORS", "CorsHeaders", "CorsPolicy"]

CORS_ALLOWED_METHODS: Final = "GET, POST, DELETE, OPTIONS"
# Any header: browser SDKs add their own (OpenAI's sends x-stainless-*), and the origin check,
# not the header list, is what keeps other sites out. A preflight gets the headers it asked for
# back rather than llama-server's "*", which by the Fetch standard never covers Authorization:
# a page sending its key would be refused.
CORS_ALLOWED_HEADERS: Final = "*"
LOOPBACK_ORIGINS: Final = "localhost"
# A worker's --cors-origins under the router: no CORS at all, so no page reads a keyless worker.
NO_CORS: Final = "none"
# http(s)://localhost, 127.0.0.1 or [::1], any port. Matched against the whole Origin header.
_LOOPBACK_ORIGIN: Final = re.compile(r"https?://(?:localhost|127\.0\.0\.1|\[::1\])(?::\d{1,5})?")


class CorsPolicy:
    """Which origins may read answers, from ``--cors-origins``."""

    def __init__(self, origins: Sequence[str]) -> None:
        self._any = "*" in origins
        self._loopback = LOOPBACK_ORIGINS in origins
        self._literal = frozenset(o for o in origins if o not in ("*", LOOPBACK_ORIGINS))

    def names(self, origin: str) -> bool:
        """Whether ``origin`` is named in the list (itself, or a loopback origin by ``localhost``),
        rather than only covered by ``*``: such pages may manage the server too."""
        return origin in self._literal or (
            self._loopback and _LOOPBACK_ORIGIN.fullmatch(origin) is not None
        )

    def covers(self, origin: str) -> bool:
        """Whether a page from ``origin`` may call the server at all (``*`` or named)."""
        return self._any or self.names(origin)

    def allow_origin(self, origin: str | None) -> str | None:
        """The ``Access-Control-Allow-Origin`` value for a request from ``origin``, if any."""
        if origin is None:
            return "*" if self._any else None
        return origin if self.covers(origin) else None


class CorsHeaders:
    """ASGI wrapper: answers preflights and adds the allow-origin header to every answer."""

    def __init__(self, app: ASGIApp, policy: CorsPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        origin = scope_header(scope, b"origin")
        allowed = self.policy.allow_origin(origin.decode("latin-1") if origin else None)
        added: list[tuple[bytes, bytes]] = [(b"vary", b"Origin")]
        if allowed is not None:
            added.append((b"access-control-allow-origin", allowed.encode("latin-1")))
        if scope["method"] == "OPTIONS":
            added += [
                (b"access-control-allow-methods", CORS_ALLOWED_METHODS.encode()),
                (
                    b"access-control-allow-headers",
                    scope_header(scope, b"access-control-request-headers")
                    or CORS_ALLOWED_HEADERS.encode(),
                ),
                (b"content-length", b"0"),
            ]
            start: HTTPResponseStartEvent = {
                "type": "http.response.start",
                "status": 200,
                "headers": added,
            }
            await send(start)
            body: HTTPResponseBodyEvent = {
                "type": "http.response.body",
                "body": b"",
                "more_body": False,
            }
            await send(body)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                event: dict[str, Any] = dict(message)
                event["headers"] = [*event.get("headers", ()), *added]
                message = event  # type: ignore[assignment]  # a union of TypedDicts
            await send(message)

        await self.app(scope, receive, with_headers)
