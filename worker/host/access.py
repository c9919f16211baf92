"""Who may call a worker run alone as llama-server: ``--api-key`` and ``--cors-origins``.

Under the router a worker listens on loopback for the router only: it gets no key, and the
router passes ``--cors-origins none`` so that no web page can read a keyless worker's answers
(its ``/slots`` show other callers' prompts). Run alone, it answers as llama-server does
(docs/serving.md, "A worker alone"): CORS from :mod:`corral.http.cors`, and with keys every request
but ``/health``, ``/v1/health`` and CORS preflights needs one, unknown routes included.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send

from corral.http.cors import NO_CORS, CorsHeaders
from corral.http.errors import json_response
from corral.http.key_check import KeyDigests, invalid_key_error, presented_keys

__all__ = ["with_access_rules"]

_PUBLIC_PATHS: Final = frozenset(("/health", "/v1/health"))


class _KeyRequired:
    """ASGI wrapper: a request without one of the keys gets llama-server's 401."""

    def __init__(self, app: ASGIApp, keys: Sequence[str]) -> None:
        self.app = app
        self._keys = KeyDigests(keys)

    def _allows(self, scope: Scope) -> bool:
        if scope["type"] != ScopeType.HTTP or scope["method"] == "OPTIONS":
            return True
        if scope["path"] in _PUBLIC_PATHS:
            return True
        return any(self._keys.match(key) is not None for key in presented_keys(scope["headers"]))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._allows(scope):
            await self.app(scope, receive, send)
            return
        error = invalid_key_error()
        await json_response(error.envelope(), error.status)(scope, receive, send)


def with_access_rules(
    app: ASGIApp, api_keys: Sequence[str], cors_origins: Sequence[str]
) -> ASGIApp:
    """``app`` behind the key check, and that behind CORS (a 401 carries CORS headers too, and
    a preflight needs no key), unless ``cors_origins`` is ``[NO_CORS]``."""
    if api_keys:
        app = _KeyRequired(app, api_keys)
    if list(cors_origins) == [NO_CORS]:
        return app
    return CorsHeaders(app, cors_origins)
