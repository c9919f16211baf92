"""``GET``/``POST /cors-proxy?url=URL``: llama-server's fetch-for-the-browser (``--ui-mcp-proxy``).

llama-server's Web UI reaches MCP servers through it, since a page cannot call most of them
itself (CORS). As upstream (``server-cors-proxy.h``): off by default (403 "this feature is
disabled"); the URL must be http(s) with a host and no password; only the request's
``X-Llama-Server-Proxy-Header-NAME`` headers go on, as ``NAME``, so the caller's own key,
cookies and proxy credentials never leave; the answer's status, type and body come back as they
arrive. Unlike upstream (docs/security.md, "Web pages"):

- it is management: with API keys only an ``admin`` key may use it (the router's workers and
  local services must not become reachable to an ``inference`` key), and no web page that
  ``--cors-origins *`` alone covers may;
- it fetches public addresses only: a name that resolves to any loopback, link-local, private
  or otherwise non-global address is refused (403), unless ``--ui-mcp-proxy-private``; the
  connection goes to the address resolved, so the name cannot resolve elsewhere in between;
- every answer carries ``Content-Security-Policy: sandbox`` and ``nosniff``, and no
  ``Set-Cookie``: an HTML page fetched through it never runs on the router's origin, where the
  Web UI keeps its key and conversations.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import AsyncIterator
from typing import Any, Final

import anyio
import httpx
from litestar import Request, route
from litestar.params import FromQuery
from litestar.response.base import ASGIResponse

from corral.http.errors import ApiError
from corral.http.streaming import ClosingStreamingResponse
from router.api.runtime import runtime
from router.security.api_keys import admin_only

__all__ = ["cors_proxy_routes"]

_FORWARDED_PREFIX = "x-llama-server-proxy-header-"
_TIMEOUT_SECONDS = 600.0  # upstream's read and write timeouts
# On every answer, errors included: whatever comes back is never a page of the router's origin.
_SANDBOXED: Final = {"content-security-policy": "sandbox", "x-content-type-options": "nosniff"}
# Hop-by-hop and framing headers: the router frames its own answer. No cookie the target sets
# may land on the router's origin, and the target's own policy gives way to ours (the strictest).
_ANSWER_DROP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "set-cookie", *_SANDBOXED}
)


def _refuse(status: int, message: str, error_type: str | None = None) -> ApiError:
    return ApiError(status, message, error_type, headers=_SANDBOXED)


def _target(url: str | None) -> httpx.URL:
    try:
        target = httpx.URL(url or "")
    except httpx.InvalidURL as exc:
        raise _refuse(400, f"invalid target URL: {exc}") from None
    if target.scheme not in ("http", "https"):
        raise _refuse(400, f"unsupported URL scheme in target URL: {target.scheme!r}")
    if not target.host:
        raise _refuse(400, "invalid target URL: missing host")
    if target.password:
        raise _refuse(400, "authentication in target URL is not supported")
    return target


def _is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.partition("%")[0])  # fe80::1%eth0: the zone goes
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


async def _addresses(target: httpx.URL, *, allow_private: bool) -> list[str]:
    """The target's addresses, in the resolver's order, when every one is public (or
    ``allow_private``)."""
    port = target.port or (443 if target.scheme == "https" else 80)
    try:
        found = await anyio.getaddrinfo(target.host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise _refuse(502, f"cannot resolve {target.host}: {exc}") from None
    addresses = [str(info[4][0]) for info in found]
    for address in addresses:
        if not allow_private and not _is_public(address):
            raise _refuse(
                403,
                f"{target.host} is a loopback, link-local or private address ({address}); "
                "/cors-proxy fetches public addresses only (see --ui-mcp-proxy-private)",
                "permission_error",
            )
    return addresses


def _pinned(
    client: httpx.AsyncClient,
    method: str,
    target: httpx.URL,
    address: str,
    headers: dict[str, str],
    body: bytes | None,
) -> httpx.Request:
    """A request to a checked ``address`` that still names the target's host in ``Host`` and
    to TLS, so that the name cannot resolve to another address between the check and the
    connection."""
    if not any(name.lower() == "host" for name in headers):
        headers = {**headers, "Host": target.netloc.decode("ascii")}
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    return client.build_request(
        method,
        target.copy_with(host=address),
        headers=headers,
        content=body,
        extensions=extensions,
    )


def _forwarded_headers(request: Request[Any, Any, Any]) -> dict[str, str]:
    return {
        name[len(_FORWARDED_PREFIX) :]: value
        for name, value in request.headers.items()
        if name.lower().startswith(_FORWARDED_PREFIX) and len(name) > len(_FORWARDED_PREFIX)
    }


@route("/cors-proxy", http_method=["GET", "POST"], opt=admin_only())
async def cors_proxy(
    request: Request[Any, Any, Any], url: FromQuery[str | None] = None
) -> ASGIResponse:
    settings = runtime(request).settings
    if not settings.ui_mcp_proxy:
        raise _refuse(403, "this feature is disabled", "feature_disabled")
    target = _target(url)
    addresses = await _addresses(target, allow_private=settings.ui_mcp_proxy_private)
    body = await request.body() if request.method == "POST" else None
    headers = _forwarded_headers(request)
    client = httpx.AsyncClient(timeout=_TIMEOUT_SECONDS, follow_redirects=False, trust_env=False)
    try:
        # Each address in turn until one accepts, as a connection to the name would
        # ("localhost" may be ::1 first, for a server on 127.0.0.1 only).
        for address in addresses:
            pinned = _pinned(client, request.method, target, address, headers, body)
            try:
                upstream = await client.send(pinned, stream=True)
                break
            except httpx.ConnectError:
                if address == addresses[-1]:
                    raise
    except httpx.HTTPError as exc:
        await client.aclose()
        raise _refuse(502, f"cannot reach {target}: {exc}") from None

    async def relay() -> AsyncIterator[bytes]:
        try:
            async for chunk in upstream.aiter_raw():
                yield chunk
        finally:
            await upstream.aclose()
            await client.aclose()

    headers = {k: v for k, v in upstream.headers.items() if k.lower() not in _ANSWER_DROP}
    return ClosingStreamingResponse(
        iterator=relay(), status_code=upstream.status_code, headers=headers | _SANDBOXED
    )


cors_proxy_routes = [cors_proxy]
