"""Who may call a worker: only its router, or, run alone as llama-server, ``--api-key`` holders.

Under the router a worker listens on loopback for the router only: every request, ``/health``
and ``OPTIONS`` included, needs the key the router gave it (``corral/children/worker_key.py``,
docs/protocol.md §8), since any local user or process can reach a loopback port. The router also
passes ``--cors-origins none``, so no web page is answered with CORS headers (its ``/slots`` show
other callers' prompts), nor can make it act: the router sends no ``Origin``, so a request that
carries one comes from a page and is refused. Run alone, it answers as llama-server does
(docs/serving.md, "A worker alone"): CORS from :mod:`corral.http.cors`, and with keys every
request but ``/health``, ``/v1/health`` and CORS preflights needs one, unknown routes included;
unlike llama-server, pages get the Origin check of :mod:`corral.http.origins` (slot files and
LoRA scales are management, as the routes' ``opt`` says: corral/http/worker_routes.py), alone
or not.

Either way the Host check of :mod:`corral.http.hosts` keeps DNS-rebinding pages out.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Final

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send

from corral.children.worker_key import WORKER_KEY_HEADER
from corral.http.cors import NO_CORS, CorsHeaders, CorsPolicy
from corral.http.errors import json_response
from corral.http.hosts import HostPolicy, host_check, listens_on_loopback_only
from corral.http.key_check import KeyDigests, invalid_key_error, presented_keys
from corral.http.origins import OriginCheck
from corral.http.worker_routes import public_paths

__all__ = ["with_access_rules"]

_PUBLIC_PATHS: Final = public_paths()


async def _refuse(scope: Scope, receive: Receive, send: Send) -> None:
    error = invalid_key_error()
    await json_response(error.envelope(), error.status)(scope, receive, send)


class _RouterOnly:
    """ASGI wrapper: a request without the router's key for this worker gets the same 401."""

    def __init__(self, app: ASGIApp, key: str) -> None:
        self.app = app
        self._key = KeyDigests([key])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:  # lifespan is off and websockets are not served
            await self.app(scope, receive, send)
            return
        headers = scope["headers"]
        presented = [value for name, value in headers if name == WORKER_KEY_HEADER]
        if not any(self._key.match(value) is not None for value in presented):
            await _refuse(scope, receive, send)
            return
        # The routes never see the key, so none can echo it.
        kept = [(name, value) for name, value in headers if name != WORKER_KEY_HEADER]
        scope["headers"] = kept
        await self.app(scope, receive, send)


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
        await (self.app if self._allows(scope) else _refuse)(scope, receive, send)


def with_access_rules(
    app: ASGIApp,
    api_keys: Sequence[str],
    cors_origins: Sequence[str],
    allowed_hosts: Sequence[str],
    sockets: Sequence[socket.socket],
    router_key: str = "",
) -> ASGIApp:
    """``app`` behind the key check, that behind the Origin check, that behind CORS (a 401 or
    403 carries CORS headers too, and a preflight needs no key) unless ``cors_origins`` is
    ``[NO_CORS]``, that behind the router's key when there is one, and all of it behind the
    Host check for the listening ``sockets``."""
    if api_keys:
        app = _KeyRequired(app, api_keys)
    no_cors = list(cors_origins) == [NO_CORS]
    policy = CorsPolicy(() if no_cors else cors_origins)
    app = OriginCheck(app, policy)
    if not no_cors:
        app = CorsHeaders(app, policy)
    if router_key:
        app = _RouterOnly(app, router_key)
    hosts = HostPolicy(allowed_hosts)
    return host_check(app, hosts, loopback_only=listens_on_loopback_only(sockets))
