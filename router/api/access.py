"""``GET /v1/key``: what the caller's key may do, so the Web UI can hide what it may not.

Only the scope, the limits and a short hash of the key (to tell keys apart) are answered,
never the key itself. A router without keys lets everyone do everything: ``admin``. ``tools``
says whether the router's tools are on (``GET /tools`` answers 403 when they are off), so a
page need not ask for them to find out.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, get

from router.security.api_keys import KeyScope
from router.security.guard import ApiKeyAuth
from router.tools.toolbox import ToolBox

__all__ = ["access_routes"]


@get("/v1/key")
async def key_info(request: Request[Any, Any, Any]) -> dict[str, Any]:
    auth: ApiKeyAuth = request.app.state.auth
    # The middleware has let the request through, so a keyed router found a key in it.
    key = auth.identify(request.scope["headers"]) if auth.enabled else None
    toolbox: ToolBox = request.app.state.tools
    if key is None:
        return {
            "scope": KeyScope.ADMIN.value,
            "key_id": None,
            "concurrency": None,
            "rpm": None,
            "tools": toolbox.enabled,
        }
    return {
        "scope": key.scope.value,
        "key_id": key.id,
        "concurrency": key.concurrency,
        "rpm": key.rpm,
        "tools": toolbox.enabled,
    }


access_routes = [key_info]
