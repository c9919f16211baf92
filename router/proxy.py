"""Forwarding a request to the worker that owns its model, and relaying the answer as it comes.

Bodies go through byte for byte; responses are relayed chunk by chunk with no buffering. A
client that disconnects cancels the relay, which closes the upstream connection, which makes the
worker stop generating (SPEC §3).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx
import structlog
from litestar import Request
from litestar.response.base import ASGIResponse

from router.disconnect import until_disconnected
from router.errors import ApiError, sse_error_event
from router.registry import FAKE_TIMING_SECONDS, ModelState
from router.scheduler import Scheduler
from router.streaming import ClosingStreamingResponse

__all__ = ["autoload_wanted", "forward", "relay"]

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


def autoload_wanted(request: Request[Any, Any, Any], default: bool) -> bool:
    """``?autoload=`` overrides ``--models-autoload``: "true"/"1" load, anything else does not."""
    value = request.query_params.get("autoload")
    return default if value is None else value.lower() in ("true", "1")


async def _relay(
    scheduler: Scheduler, state: ModelState, upstream: httpx.Response
) -> AsyncIterator[bytes]:
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
        scheduler.release(state)
        with anyio.CancelScope(shield=True):
            await upstream.aclose()


async def forward(
    request: Request[Any, Any, Any],
    scheduler: Scheduler,
    state: ModelState,
    body: bytes | None,
    *,
    autoload: bool,
    still_wanted: Callable[[], bool] | None = None,
) -> ASGIResponse:
    """Load the model if needed and allowed, then relay the request to its worker.

    ``still_wanted`` marks a resumable-session POST (SPEC §5): its client may leave while the
    model loads and it is forwarded all the same, so the generation lands in the session;
    a DELETE of the conversation meanwhile makes ``still_wanted()`` false and the request fails.
    """
    name = state.entry.name
    if not autoload and not state.running:
        raise ApiError(400, "model is not loaded")
    detached = still_wanted is not None
    # Most requests find their model ready: no waiting, so no need to watch for a disconnect.
    ready = scheduler.acquire_if_ready(name)
    if ready is not None:
        state = ready
    else:
        waiting = scheduler.acquire(name)
        state = await (waiting if detached else until_disconnected(request, waiting))
    if still_wanted is not None and not still_wanted():
        scheduler.release(state)
        raise ApiError(400, "request cancelled by a stop while the model was loading")
    return await relay(request, scheduler, state, body, detached=detached)


async def relay(
    request: Request[Any, Any, Any],
    scheduler: Scheduler,
    state: ModelState,
    body: bytes | None,
    *,
    detached: bool = False,
) -> ASGIResponse:
    """Send the request to the worker of a model it is already counted busy on."""
    name = state.entry.name
    client = state.client
    if client is None:  # stopped between becoming ready and now
        scheduler.release(state)
        raise ApiError(503, f"model '{name}' is not running")
    upstream_request = client.build_request(
        request.method,
        request.url.path,
        params=request.url.query or None,
        headers=_request_headers(request),
        content=body,
    )
    if request.method == "POST":  # GETs (props, slots, metrics) do not make a model recent
        state.last_used = time.monotonic()
    try:
        if FAKE_TIMING_SECONDS:
            await anyio.sleep(FAKE_TIMING_SECONDS)
        sending = client.send(upstream_request, stream=True)
        upstream = await (sending if detached else until_disconnected(request, sending))
    except BaseException as exc:
        scheduler.release(state)
        if isinstance(exc, httpx.TransportError):
            raise ApiError(503, f"model '{name}' is unavailable: {exc}") from None
        raise
    return ClosingStreamingResponse(
        iterator=_relay(scheduler, state, upstream),
        status_code=upstream.status_code,
        headers=_response_headers(upstream),
        media_type=upstream.headers.get("content-type", "application/json"),
    )
