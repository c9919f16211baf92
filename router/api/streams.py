"""Resumable-stream routes on the router (docs/protocol.md §5).

Each goes to the worker that owns the conversation, found in the map filled when the
conversation's POST was routed.

None of them ever loads a model. While the owner is loading (or queued to load) a replay is
told to retry (503); a DELETE meanwhile withdraws the parked request.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import anyio
import msgspec
import structlog
from litestar import Request, Response, delete, get, post
from litestar.params import FromQuery
from litestar.response.base import ASGIResponse

from corral.errors import ApiError, decode_body
from router.api.runtime import RouterRuntime, runtime
from router.model_state import ModelState, Status
from router.proxy import relay
from router.worker_http import UpstreamError

__all__ = ["stream_routes"]

_log = structlog.get_logger("corral.streams")
# Lookups and stops are small questions to a local worker: a slow one is skipped, not waited on.
_QUICK_SECONDS = 1.0
AnyRequest = Request[Any, Any, Any]


class LookupRequest(msgspec.Struct):
    conversation_ids: list[Any]


def _conversation(conv_id: str | None) -> str:
    if not conv_id:
        raise ApiError(400, "Missing conversation id in path")
    return conv_id


def _owner(rt: RouterRuntime, conversation: str) -> ModelState | None:
    model = rt.conversations.owner(conversation)
    return rt.pool.models.get(model) if model is not None else None


def _loading(rt: RouterRuntime, state: ModelState) -> bool:
    return state.status is Status.LOADING or rt.scheduler.is_queued(state.entry.name)


@get("/v1/stream")
async def replay(request: AnyRequest, conv_id: FromQuery[str | None] = None) -> ASGIResponse:
    rt = runtime(request)
    state = _owner(rt, _conversation(conv_id))
    if state is None:
        raise ApiError(404, "Stream not found or expired")
    if not rt.scheduler.hold(state):
        if _loading(rt, state):
            raise ApiError(503, "Stream owner model is loading, retry later")
        raise ApiError(404, "Stream not found or expired")
    return await relay(request, rt.scheduler, state, None)


@post("/v1/streams/lookup", status_code=200)
async def lookup(request: AnyRequest) -> list[Any]:
    rt = runtime(request)
    body = decode_body(await request.body(), LookupRequest)
    ids = [item for item in body.conversation_ids if isinstance(item, str) and item]
    found: list[Any] = []

    async def ask(state: ModelState, conversations: list[str]) -> None:
        client = state.client
        if client is None or state.status not in (Status.LOADED, Status.SLEEPING):
            return
        question = msgspec.json.encode({"conversation_ids": conversations})
        try:
            with anyio.fail_after(_QUICK_SECONDS):
                status, answer = await client.exchange("POST", b"/v1/streams/lookup", question)
        except (UpstreamError, TimeoutError) as exc:
            _log.warning("stream lookup failed", model=state.entry.name, error=str(exc))
            return
        if status == 200:
            found.extend(msgspec.json.decode(answer))

    async with anyio.create_task_group() as group:
        for model, conversations in rt.conversations.by_model(ids).items():
            state = rt.pool.models.get(model)
            if state is not None:
                group.start_soon(ask, state, conversations)
    return found


@delete("/v1/stream", status_code=204)
async def stop(request: AnyRequest, conv_id: FromQuery[str | None] = None) -> Response[None]:
    rt = runtime(request)
    conversation = _conversation(conv_id)
    state = _owner(rt, conversation)
    # Forgotten first: a request still waiting for its model then knows it is not wanted.
    rt.conversations.forget(conversation)
    client = state.client if state is not None else None
    if client is not None and state is not None and state.status is not Status.LOADING:
        target = b"/v1/stream?" + urlencode({"conv_id": conversation}).encode()
        try:
            with anyio.fail_after(_QUICK_SECONDS):
                await client.exchange("DELETE", target, None)
        except (UpstreamError, TimeoutError) as exc:
            _log.warning("stream stop failed", model=state.entry.name, error=str(exc))
    return Response(None, status_code=204)


stream_routes = [replay, lookup, stop]
