"""The router's Origin check (:mod:`corral.http.origins`): which routes are management for pages.

A page only ``*`` covers may run inference, as llama-server lets it; management never. Which
routes are management is said where each route is written, in its ``opt``:

- :func:`~router.security.api_keys.admin_only` routes, the ones an ``inference`` key may not
  use either: downloads and deletions (``POST``/``DELETE /models``, ``/api/pull``,
  ``/api/delete``, ``/api/copy``), load and unload, ``?reload=`` listings, slot save/restore,
  LoRA scales, ``/cors-proxy``;
- :func:`runs_tools` routes, which an ``inference`` key may use for read tools but no page
  ``*`` covers may: ``POST /tools`` (built-in and MCP tools).

``DELETE /v1/stream`` (stopping a generation, which an ``inference`` key may do) is no management.
A page only ``*`` covers is also no admin inside the inference routes it may use
(:func:`router.security.callers.is_admin`): Ollama's ``keep_alive`` and empty-prompt
load/unload, and paths in listings, are not its to use or see.
The check runs after routing, as the key check does, and before it (router/app.py): a request
that matched no route runs nothing anyway.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import structlog
from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Receive, Scope, Send

from corral.http.cors import CorsPolicy
from corral.http.origins import page_refusal, request_origin
from router.security.api_keys import needs_admin
from router.security.callers import remember_star_page

__all__ = ["TOOLS_OPT", "OriginGate", "is_management", "runs_tools"]

# The key in a route handler's ``opt`` of a route that runs tools (see runs_tools).
TOOLS_OPT: Final = "corral_tools"

_log = structlog.get_logger("corral.security")


def runs_tools() -> dict[str, Any]:
    """The ``opt`` of a route that runs server-side tools: no page only ``*`` covers may."""
    return {TOOLS_OPT: True}


def is_management(scope: Scope) -> bool:
    """Whether the route a request matched is management for web pages (see above)."""
    handler = scope.get("route_handler")
    opt: Mapping[str, Any] = getattr(handler, "opt", None) or {}
    return needs_admin(scope) or opt.get(TOOLS_OPT) is True


class OriginGate(ASGIMiddleware):
    """Refuses (403, in the route's API's error JSON) what a web page may not do, before the
    key check and the handler."""

    scopes = (ScopeType.HTTP,)

    def __init__(self, policy: CorsPolicy) -> None:
        self._policy = policy

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        refused = page_refusal(self._policy, scope, management=is_management(scope))
        if refused is not None:
            _log.info(
                "refused: a web page's origin",
                origin=request_origin(scope),
                path=scope.get("path_template"),
            )
            raise refused
        if page_refusal(self._policy, scope, management=True) is not None:
            # Let through as inference only: what the handler would do beyond that is an
            # admin's (router.security.callers.is_admin).
            remember_star_page(scope)
        await next_app(scope, receive, send)
