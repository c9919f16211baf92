"""API keys (docs/protocol.md §8): who may call the router.

Where the key check sits matters. CORS (:mod:`corral.http.cors`) wraps the whole app, so every
response, a 401 included, carries CORS headers, and preflights are answered before anything
else runs. Inside it, app-level middleware only runs for requests that
matched a route; requests that did not (unknown path: 404, wrong method: 405) go straight to the
exception handlers. So the check is made in two places with one predicate,
:meth:`ApiKeyAuth.allows`: :class:`ApiKeyMiddleware` for matched routes, and handlers for routing
404/405s that turn them into 401s for callers without a valid key. A caller without a key thus
gets 401 for unknown routes too (as llama-server does) and cannot map which routes exist; a
caller with a key gets the real 404/405.

Once a key is found, the same middleware applies its scope (an ``inference`` key on a route
marked :func:`~router.security.api_keys.admin_only` is a 403) and its limits
(:mod:`router.security.rate_limits`,
a 429), before the handler reads anything.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Iterable, Sequence
from typing import Any, Final

import structlog
from litestar import Request, Response
from litestar.enums import ScopeType
from litestar.exceptions import HTTPException
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, ExceptionHandler, ExceptionHandlersMap, Receive, Scope, Send

from corral.http.errors import ApiError, ErrorEnvelope, error_response
from corral.http.key_check import KeyDigests, invalid_key_error, presented_keys
from router.security.api_keys import ApiKey, KeyScope, is_uncounted, needs_admin
from router.security.callers import remember_key
from router.security.rate_limits import Clock, LimitExceeded, Limits
from router.settings import ServeSettings

__all__ = [
    "PUBLIC_PATHS",
    "ApiKeyAuth",
    "ApiKeyMiddleware",
    "InvalidApiKey",
    "KeyForbidden",
    "is_loopback_host",
    "is_public_path",
    "log_keys",
    "warn_if_exposed",
]

# Route paths that answer without a key (docs/protocol.md §8), compared with the path *template*
# of the route a request matched, never with the raw request path: a crafted path can then only
# reach a public route if the router itself would serve that route. A trailing "*" is a prefix
# match, for the Web UI's assets. OPTIONS is always public (CORS preflights carry no credentials).
PUBLIC_PATHS: Final = ("/", "/health", "/v1/health", "/assets/*")

_log = structlog.get_logger("corral.security")


class InvalidApiKey(Exception):
    """Raised by :class:`ApiKeyMiddleware`; rendered as the 401 of docs/protocol.md §8.

    The rendering is :class:`ApiKeyAuth`'s.
    """


class KeyForbidden(Exception):
    """An inference key on a management route: rendered as a 403 ``permission_error``."""


def is_public_path(path_template: str) -> bool:
    return any(
        path_template.startswith(public[:-1]) if public.endswith("*") else path_template == public
        for public in PUBLIC_PATHS
    )


def _unauthorized() -> Response[ErrorEnvelope]:
    envelope = invalid_key_error().envelope()
    return Response(envelope, status_code=401, headers={"WWW-Authenticate": "Bearer"})


def _fallback_response(
    base: ExceptionHandlersMap, request: Request[Any, Any, Any], exc: Exception
) -> Response[Any]:
    """What ``base`` alone would have answered (status-code keys first, then the class's MRO)."""
    handler: ExceptionHandler[Any] | None = (
        base.get(exc.status_code) if isinstance(exc, HTTPException) else None
    )
    if handler is None:
        handler = next((base[cls] for cls in type(exc).__mro__ if cls in base), None)
    if handler is not None:
        return handler(request, exc)
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    return error_response(ApiError(status, str(exc)))


def _forbidden() -> Response[ErrorEnvelope]:
    message = "this key may not manage models (it is an inference key)"
    return error_response(ApiError(403, message, "permission_error"))


class ApiKeyAuth:
    """The configured keys, the rule for which requests need one, and each key's limits."""

    def __init__(self, keys: Sequence[ApiKey], clock: Clock | None = None) -> None:
        self._keys = tuple(keys)
        self._digests = KeyDigests([key.secret for key in keys])
        self.limits = Limits(keys, clock or time.monotonic)

    @classmethod
    def of(cls, settings: ServeSettings) -> ApiKeyAuth:
        """The router's: its ``--api-key``s and key files, read here as for
        :func:`warn_if_exposed`."""
        return cls(settings.api_keys)

    @property
    def enabled(self) -> bool:
        return bool(self._digests)

    def identify(self, headers: Iterable[tuple[bytes, bytes]]) -> ApiKey | None:
        """The configured key a request carries, or None."""
        for presented in presented_keys(headers):
            index = self._digests.match(presented)
            if index is not None:
                return self._keys[index]
        return None

    def _is_public(self, scope: Scope) -> bool:
        if not self.enabled or scope.get("method") == "OPTIONS":
            return True
        # Only present once routing matched; an unmatched request is never public.
        template = scope.get("path_template")
        return template is not None and is_public_path(template)

    def allows(self, scope: Scope) -> bool:
        return self._is_public(scope) or self.identify(scope["headers"]) is not None

    def check(self, scope: Scope) -> ApiKey | None:
        """The key of a request to a matched route that may go on (None: a public route).

        Raises :class:`InvalidApiKey` (401), :class:`KeyForbidden` (403) or
        :class:`~router.security.rate_limits.LimitExceeded` (429); the limits are only counted in by
        :meth:`ApiKeyMiddleware.handle`.
        """
        if self._is_public(scope):
            return None
        key = self.identify(scope["headers"])
        if key is None:
            raise InvalidApiKey
        if key.scope is not KeyScope.ADMIN and needs_admin(scope):
            _log.info("refused: the key's scope", key=key.id, path=scope.get("path_template"))
            raise KeyForbidden
        return key

    def middleware(self) -> list[ApiKeyMiddleware]:
        return [ApiKeyMiddleware(self)] if self.enabled else []

    def exception_handlers(self, base: ExceptionHandlersMap) -> ExceptionHandlersMap:
        """``base`` plus the 401 for rejected requests and for routing 404/405s without a key,
        the 403 of a scope and the 429 of a limit."""
        if not self.enabled:
            return base

        def on_invalid_key(_: Request[Any, Any, Any], __: Exception) -> Response[Any]:
            return _unauthorized()

        def on_forbidden(_: Request[Any, Any, Any], __: Exception) -> Response[Any]:
            return _forbidden()

        def on_limit(_: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
            assert isinstance(exc, LimitExceeded)
            return error_response(exc.answer())

        def on_routing_error(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
            if not self.allows(request.scope):
                return _unauthorized()
            return _fallback_response(base, request, exc)

        # Keyed by status code because Litestar prefers those to exception classes.
        return {
            **base,
            InvalidApiKey: on_invalid_key,
            KeyForbidden: on_forbidden,
            LimitExceeded: on_limit,
            404: on_routing_error,
            405: on_routing_error,
        }


class ApiKeyMiddleware(ASGIMiddleware):
    """Rejects requests to matched, non-public routes without a valid key, with a key of too
    narrow a scope, or beyond their key's limits; counts the admitted ones until they end."""

    scopes = (ScopeType.HTTP, ScopeType.WEBSOCKET)

    def __init__(self, auth: ApiKeyAuth) -> None:
        self._auth = auth

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        key = self._auth.check(scope)
        remember_key(scope, key)  # for the handlers whose answer depends on it
        limiter = self._auth.limits.for_key(key) if key is not None else None
        if limiter is None:
            await next_app(scope, receive, send)
            return
        counted = not is_uncounted(scope)
        try:
            limiter.admit(counted=counted)
        except LimitExceeded as exc:
            _log.info("refused: the key's limits", key=key.id if key else None, reason=exc.message)
            raise
        if not counted:
            await next_app(scope, receive, send)
            return
        try:
            # The app returns once the response has been sent in full (a stream: its last
            # byte, or the client gone), so a stream counts as in flight until it ends. A
            # resumable session's stream ends when its generation does, client or not
            # (router/relay/response.py): detached, it still counts.
            await next_app(scope, receive, send)
        finally:
            limiter.release()


def is_loopback_host(host: str) -> bool:
    address = host.strip("[]")
    if address.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:  # a host name other than localhost: it may resolve to anything
        return False


def log_keys(settings: ServeSettings) -> None:
    """Confirm at startup what the key flags gave, by count and scope, never a key: an operator
    who passed a file sees that it was read as meant (issue 54)."""
    keys = settings.api_keys
    if keys:
        admin = sum(key.scope is KeyScope.ADMIN for key in keys)
        counts = f"{len(keys)}: {admin} admin, {len(keys) - admin} inference"
        _log.info("API keys read", keys=counts)


def warn_if_exposed(settings: ServeSettings) -> None:
    hosts = [h.strip() for h in settings.host.split(",") if h.strip()]
    if not settings.api_keys and not all(is_loopback_host(h) for h in hosts):
        _log.warning(
            "security: no API key is set and the router listens beyond loopback; anyone who "
            "can reach it can use and manage every model (set --api-key or --api-key-file)",
            host=settings.host,
        )
