"""``GET``/``POST /cors-proxy?url=URL``: llama-server's fetch-for-the-browser (``--ui-mcp-proxy``).

llama-server's Web UI reaches MCP servers through it, since a page cannot call most of them
itself (CORS). As upstream (``server-cors-proxy.h``): off by default (403 "this feature is
disabled"); the URL must be http(s) with a host and no password; only the request's
``X-Llama-Server-Proxy-Header-NAME`` headers go on, as ``NAME``, so the caller's own key,
cookies and proxy credentials never leave; the answer's status, type and body come back as they
arrive. It is no public route: with API keys, the caller needs one.

It fetches whatever the caller names, loopback and private addresses included: turn it on only
where every caller is trusted (docs/operations.md).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import httpx
from litestar import Request, route
from litestar.params import FromQuery
from litestar.response.base import ASGIResponse

from corral.http.errors import ApiError, json_response
from corral.http.streaming import ClosingStreamingResponse
from router.api.runtime import runtime

__all__ = ["cors_proxy_routes"]

_FORWARDED_PREFIX = "x-llama-server-proxy-header-"
_TIMEOUT_SECONDS = 600.0  # upstream's read and write timeouts
# Hop-by-hop and framing headers: the router frames its own answer.
_ANSWER_DROP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length"})


def _target(url: str | None) -> str:
    parts = urlsplit(url or "")
    if parts.scheme not in ("http", "https"):
        raise ApiError(400, f"unsupported URL scheme in target URL: {parts.scheme!r}")
    if not parts.hostname:
        raise ApiError(400, "invalid target URL: missing host")
    if parts.password:
        raise ApiError(400, "authentication in target URL is not supported")
    return url or ""


def _forwarded_headers(request: Request[Any, Any, Any]) -> dict[str, str]:
    return {
        name[len(_FORWARDED_PREFIX) :]: value
        for name, value in request.headers.items()
        if name.lower().startswith(_FORWARDED_PREFIX) and len(name) > len(_FORWARDED_PREFIX)
    }


@route("/cors-proxy", http_method=["GET", "POST"])
async def cors_proxy(
    request: Request[Any, Any, Any], url: FromQuery[str | None] = None
) -> ASGIResponse:
    if not runtime(request).settings.ui_mcp_proxy:
        return json_response(
            {"error": {"message": "this feature is disabled", "type": "feature_disabled"}}, 403
        )
    target = _target(url)
    body = await request.body() if request.method == "POST" else None
    client = httpx.AsyncClient(timeout=_TIMEOUT_SECONDS, follow_redirects=False, trust_env=False)
    upstream_request = client.build_request(
        request.method, target, headers=_forwarded_headers(request), content=body
    )
    try:
        upstream = await client.send(upstream_request, stream=True)
    except httpx.HTTPError as exc:
        await client.aclose()
        raise ApiError(502, f"cannot reach {target}: {exc}") from None

    async def relay() -> AsyncIterator[bytes]:
        try:
            async for chunk in upstream.aiter_raw():
                yield chunk
        finally:
            await upstream.aclose()
            await client.aclose()

    headers = {k: v for k, v in upstream.headers.items() if k.lower() not in _ANSWER_DROP}
    return ClosingStreamingResponse(
        iterator=relay(), status_code=upstream.status_code, headers=headers
    )


cors_proxy_routes = [cors_proxy]
