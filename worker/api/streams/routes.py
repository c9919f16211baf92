"""The resumable-stream routes (docs/protocol.md §5): replay, lookup, stop.

None of them needs the model: sessions live in the worker process, so they answer while the
model sleeps, and never wake it.
"""

from __future__ import annotations

from typing import Annotated

from litestar import Response, delete, get, post
from litestar.params import FromQuery, Parameter
from litestar.response.base import ASGIResponse

from corral.http.errors import ApiError, decode_body
from corral.http.streaming import SSE_HEADERS, ClosingStreamingResponse
from corral.http.worker_routes import STREAM_LOOKUP, STREAM_REPLAY, STREAM_STOP
from worker.answer.sse_pings import with_pings
from worker.answer.stream_sessions import OffsetLost, StreamSessions
from worker.api.streams.protocol import LookupRequest
from worker.state import AnyRequest, WorkerState

__all__ = ["stream_routes"]


def _sessions(request: AnyRequest) -> StreamSessions:
    state: WorkerState = request.app.state.worker
    return state.sessions


def _conversation(conv_id: str | None) -> str:
    if not conv_id:
        raise ApiError(400, "Missing conversation id in path")
    return conv_id


@get(STREAM_REPLAY.paths)
async def replay(
    request: AnyRequest,
    conv_id: FromQuery[str | None] = None,
    offset_text: Annotated[str | None, Parameter(query="from")] = None,
) -> ASGIResponse:
    session = _sessions(request).get(_conversation(conv_id))
    if session is None:
        raise ApiError(404, "Stream not found or expired")
    try:
        offset = int(offset_text or 0)
    except ValueError:
        raise ApiError(400, "Invalid 'from' offset") from None
    if offset < 0:
        raise ApiError(400, "Invalid 'from' offset")
    try:
        session.check_offset(offset)
    except OffsetLost:
        raise ApiError(400, "Stream offset lost, please restart") from None
    interval = request.app.state.worker.settings.sse_ping_interval
    return ClosingStreamingResponse(
        iterator=with_pings(session.read(offset), interval),
        media_type="text/event-stream",
        headers=SSE_HEADERS,
    )


@post(STREAM_LOOKUP.paths, status_code=200)
async def lookup(request: AnyRequest) -> list[dict[str, object]]:
    body = decode_body(await request.body(), LookupRequest)
    ids = [item for item in body.conversation_ids if isinstance(item, str) and item]
    return _sessions(request).lookup(ids)


@delete(STREAM_STOP.paths, status_code=204)
async def stop(request: AnyRequest, conv_id: FromQuery[str | None] = None) -> Response[None]:
    _sessions(request).delete(_conversation(conv_id))
    return Response(None, status_code=204)


stream_routes = [replay, lookup, stop]
