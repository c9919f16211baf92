"""Who sent a request, for the handlers whose answer depends on it (docs/security.md, "Key
holders (scopes)").

:class:`~router.security.guard.ApiKeyMiddleware` finds the request's key before any handler
runs and leaves it in the ASGI scope; handlers read it back here rather than matching the key
again. A router without keys has no callers to tell apart: everyone is admin, as before keys
existed, and :func:`caller_id` is None for all. A web page that only ``--cors-origins *``
covers is never admin, key or not (:class:`~router.security.origins.OriginGate` notes it):
``*`` lets pages run inference, and what an inference route does beyond answering (Ollama's
``keep_alive``, its empty-prompt load and unload) or tells (paths, command lines) is
management's (docs/security.md, "Web pages").
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, Final, cast

from litestar.types import Scope

from router.scheduling.waiting_line import Caller
from router.security.api_keys import ApiKey, KeyScope

__all__ = [
    "caller_id",
    "is_admin",
    "queue_caller",
    "remember_key",
    "remember_star_page",
    "request_key",
]

_KEY: Final = "corral.key"  # the scope's key: ASGI lets servers and apps add their own
_STAR_PAGE: Final = "corral.star_page"
_ANYONE: Final = Caller()  # every request of a router without keys: made once, not per request
_PAGES: Final = Caller(page=True)  # but the pages only ``*`` covers


def remember_key(scope: Scope, key: ApiKey | None) -> None:
    """The middleware's note of the key a request carries (None: a router without keys, or a
    public route)."""
    cast("MutableMapping[str, Any]", scope)[_KEY] = key


def remember_star_page(scope: Scope) -> None:
    """The Origin check's note that the request comes from a page only ``*`` covers."""
    cast("MutableMapping[str, Any]", scope)[_STAR_PAGE] = True


def request_key(scope: Scope) -> ApiKey | None:
    key: ApiKey | None = cast("MutableMapping[str, Any]", scope).get(_KEY)
    return key


def is_admin(scope: Scope) -> bool:
    """Whether the request may manage models: an admin key, or any caller without keys, but
    never a page only ``*`` covers."""
    if cast("MutableMapping[str, Any]", scope).get(_STAR_PAGE):
        return False
    key = request_key(scope)
    return key is None or key.scope is KeyScope.ADMIN


def caller_id(scope: Scope) -> str | None:
    """The short id of the request's key (what separates one key's resumable streams from
    another's); None on a router without keys."""
    key = request_key(scope)
    return key.id if key is not None else None


def queue_caller(scope: Scope) -> Caller:
    """Where the request goes in the scheduler's order, and whose places in the queue and
    sessions it counts against: its key's class and id. Without keys, everyone is one
    interactive caller, but the pages only ``*`` covers (other sites), which are another, so
    that no site can take the user's places; all of them one, as a site can have as many
    origins as it likes (subdomains). The Web UI's requests carry the key its user gave it, so
    they take that key's class (docs/serving.md, "Scheduling")."""
    key = request_key(scope)
    if key is not None:
        return Caller(key.priority, key.id)
    return _PAGES if cast("MutableMapping[str, Any]", scope).get(_STAR_PAGE) else _ANYONE
