"""Forwarding a request to the worker that owns its model, and relaying the answer as it comes.

Bodies go through byte for byte; responses are relayed chunk by chunk with no buffering. A
client that disconnects cancels the relay, which closes the upstream connection, which makes the
worker stop generating (SPEC §3).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import structlog
from litestar import Request
from litestar.response.base import ASGIResponse

from router.disconnect import until_disconnected
from router.errors import ApiError, sse_error_event
from router.registry import ModelRegistry, ModelState
from router.streaming import ClosingStreamingResponse

__all__ = ["forward"]

_log = structlog.get_logger("corral.proxy")
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "te",
    "upgrade",
    "proxy-connection",
    "host",
}
# Workers never see the router's credentials (SPEC §8); compression would defeat streaming.
_REQUEST_DROP = _HOP_BY_HOP | {"authorization", "x-api-key", "accept-encoding"}
_RESPONSE_DROP = _HOP_BY_HOP | {"server", "date"}


def _request_headers(request: Request[Any, Any, Any]) -> dict[str, str]:
    return {k: v for k, v in request.headers.items() if k.lower() not in _REQUEST_DROP}


def _response_headers(upstream: httpx.Response) -> dict[str, str]:
    return {
        k: v
        for k, v in upstream.headers.items()
        if k.lower() not in _RESPONSE_DROP and not k.lower().startswith("access-control-")
    }


async def _relay(state: ModelState, upstream: httpx.Response) -> AsyncIterator[bytes]:
    is_sse = upstream.headers.get("content-type", "").startswith("text/event-stream")
    try:
        async for chunk in upstream.aiter_raw():
            yield chunk
    except httpx.TransportError as exc:
        _log.warning("worker connection lost mid-response", model=state.entry.name, error=str(exc))
        if is_sse:
            yield sse_error_event(
                ApiError(500, f"model '{state.entry.name}' stopped while answering")
            )
    finally:
        state.in_flight -= 1
        with anyio.CancelScope(shield=True):
            await upstream.aclose()


async def forward(
    request: Request[Any, Any, Any], registry: ModelRegistry, name: str, body: bytes | None
) -> ASGIResponse:
    state = await until_disconnected(request, registry.ensure_ready(name))
    client = state.client
    if client is None:  # stopped between becoming ready and now
        raise ApiError(503, f"model '{name}' is not running")
    upstream_request = client.build_request(
        request.method,
        request.url.path,
        params=request.url.query or None,
        headers=_request_headers(request),
        content=body,
    )
    state.in_flight += 1
    state.last_used = time.monotonic()
    try:
        upstream = await until_disconnected(request, client.send(upstream_request, stream=True))
    except BaseException as exc:
        state.in_flight -= 1
        if isinstance(exc, httpx.TransportError):
            raise ApiError(503, f"model '{name}' is unavailable: {exc}") from None
        raise
    return ClosingStreamingResponse(
        iterator=_relay(state, upstream),
        status_code=upstream.status_code,
        headers=_response_headers(upstream),
        media_type=upstream.headers.get("content-type", "application/json"),
    )
