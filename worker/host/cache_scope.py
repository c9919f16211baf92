"""The cache scope a request names (``x-corral-cache-scope``, docs/protocol.md §3): a worker
reuses a cached prompt prefix (a slot's, a ``--cache-ram`` copy, a disk-tier file) only for a
request of the same scope, and so reports in ``cached_tokens`` only what that scope left. The
router sends each key's id (router/security/cache_scope.py), so one key can neither reuse nor
measure what another asked. A request without the header (a router without keys, a worker's
own client) has the default scope, ``""``: one scope for everyone, as llama-server.
"""

from __future__ import annotations

import hashlib
from contextvars import ContextVar

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send

from corral.children.protocol import CACHE_SCOPE_HEADER
from corral.http.scope_headers import scope_header

__all__ = ["DEFAULT_SCOPE", "request_cache_scope", "scope_name", "with_cache_scope"]

DEFAULT_SCOPE = ""
_current: ContextVar[str] = ContextVar("corral_cache_scope", default=DEFAULT_SCOPE)


def scope_name(header: bytes) -> str:
    """The scope a header value names: 16 hex digits, whatever the value, so that it fits a
    saved file's header (worker/cache/kv_file.py) and writes no key id to disk."""
    return hashlib.sha256(header).hexdigest()[:16]


def request_cache_scope() -> str:
    """The scope of the request being answered; read on its task, as its generation is made."""
    return _current.get()


def with_cache_scope(app: ASGIApp) -> ASGIApp:
    """``app`` with each HTTP request's cache scope known to :func:`request_cache_scope`."""

    async def call(scope: Scope, receive: Receive, send: Send) -> None:
        header = (
            scope_header(scope, CACHE_SCOPE_HEADER) if scope["type"] == ScopeType.HTTP else None
        )
        if header is None:
            await app(scope, receive, send)
            return
        token = _current.set(scope_name(header))
        try:
            await app(scope, receive, send)
        finally:
            _current.reset(token)

    return call
