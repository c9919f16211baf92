"""Which web pages may make a server act: the Origin check (docs/security.md, "Web pages").

CORS (:mod:`corral.http.cors`) only decides which pages may *read* answers. A browser sends some
requests without asking first (a "simple" request: a POST whose ``Content-Type`` is
``text/plain``, a form), from any page, and a server that parses any body as JSON acts on them.
So the request's ``Origin`` is checked before anything runs, against the same ``--cors-origins``:

- no ``Origin`` (curl, the SDKs, a navigation) or the server's own origin (its Web UI, an
  ``Origin`` equal to ``scheme://Host`` of the request): as the key allows;
- an origin the list names (itself, or a loopback origin by ``localhost``): as the key allows;
- an origin only ``*`` covers: everything but management, which ``*`` never opens to pages;
- any other origin: nothing (403); its preflights are still answered, as llama-server does.

What counts as management is said where each route is written, in its ``opt``, and read after
routing, since ``//slots/0`` and ``/%2Fslots/0`` reach the same handler as ``/slots/0``: the
router's markers are its own (router/security/origins.py); a worker run alone marks its routes
with :func:`management_opt`, which :class:`ManagementGate` reads.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any, Final, cast
from urllib.parse import urlsplit

from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Receive, Scope, Send

from corral.http.cors import CorsPolicy
from corral.http.errors import ApiError, json_response
from corral.http.scope_headers import scope_header

__all__ = ["ManagementGate", "OriginCheck", "management_opt", "page_refusal", "request_origin"]

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
# The key in a route handler's ``opt`` of a worker's management route (see management_opt).
_MANAGEMENT_OPT: Final = "corral_management"
# The scope's note of the 403 a request gets if its route is management (ASGI lets apps add keys).
_MANAGEMENT_REFUSAL: Final = "corral.management_refusal"


def _header(scope: Scope, wanted: bytes) -> str | None:
    value = scope_header(scope, wanted)
    return None if value is None else value.decode("latin-1")


def request_origin(scope: Scope) -> str | None:
    """The request's ``Origin`` header, if it has one."""
    return _header(scope, b"origin")


def _site(url: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of an origin, default ports filled in; None if it is none."""
    try:
        parts = urlsplit(url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:  # a port out of range or not a number
        return None
    if not parts.hostname or port is None:
        return None
    return parts.scheme.lower(), parts.hostname.lower(), port


def _is_own(origin: str, scope: Scope) -> bool:
    """Whether ``origin`` is the server's own, as the browser reached it (``scheme://Host``).
    The scheme is uvicorn's, which behind a TLS proxy follows ``X-Forwarded-Proto``."""
    host = _header(scope, b"host")
    if host is None:
        return False
    own = _site(f"{scope.get('scheme', 'http')}://{host}")
    return own is not None and _site(origin) == own


def page_refusal(policy: CorsPolicy, scope: Scope, *, management: bool) -> ApiError | None:
    """The 403 for a request a web page may not make, or None when it may go on."""
    origin = request_origin(scope)
    if origin is None or policy.names(origin) or _is_own(origin, scope):
        return None
    if not policy.covers(origin):
        message = f"web pages from {origin} may not call this server (see --cors-origins)"
    elif management:
        message = (
            f"web pages from {origin} may not manage this server or run its tools: "
            "--cors-origins * never covers them; name the origin to allow it"
        )
    else:
        return None
    return ApiError(403, message, "permission_error")


def management_opt() -> dict[str, Any]:
    """The ``opt`` of a worker's management route, which :class:`ManagementGate` refuses to
    pages only ``*`` covers."""
    return {_MANAGEMENT_OPT: True}


class OriginCheck:
    """ASGI wrapper: the Origin check of a worker, before anything else runs. A page no origin of
    the list covers is refused here; for one only ``*`` covers, the 403 is left in the scope for
    :class:`ManagementGate`, which knows the route."""

    def __init__(self, app: ASGIApp, policy: CorsPolicy) -> None:
        self.app = app
        self._policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP and scope["method"] != "OPTIONS":
            refused = page_refusal(self._policy, scope, management=False)
            if refused is not None:
                await json_response(refused.envelope(), refused.status)(scope, receive, send)
                return
            refusal = page_refusal(self._policy, scope, management=True)
            cast("MutableMapping[str, Any]", scope)[_MANAGEMENT_REFUSAL] = refusal
        await self.app(scope, receive, send)


class ManagementGate(ASGIMiddleware):
    """In the app, after routing: the 403 :class:`OriginCheck` left for a request whose route is
    marked :func:`management_opt`."""

    scopes = (ScopeType.HTTP,)

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        refusal = cast("Mapping[str, Any]", scope).get(_MANAGEMENT_REFUSAL)
        opt: Mapping[str, Any] = getattr(scope.get("route_handler"), "opt", None) or {}
        if refusal is not None and opt.get(_MANAGEMENT_OPT) is True:
            raise refusal
        await next_app(scope, receive, send)
