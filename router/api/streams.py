"""Resumable-stream routes on the router (docs/protocol.md §5).

Each goes to the worker that owns the conversation, found in the map filled when the
conversation's POST was routed.

None of them ever loads a model. A replay of a session whose POST still waits for its model's
load is told to retry (503): that load will answer the POST. A replay of a session that is gone
with its worker (the worker stopped or is stopping) is told so (404 with the reason), never to
retry. A DELETE withdraws a parked POST.

Each reaches only the caller's own sessions: the conversation ids it names are looked up among
its key's claims, and the worker (or peer) is asked with the key's session ids
(router/relay/conversations.py), so another key's stream is as unknown as one never started.
None takes a ``concurrency`` slot: the generation it watches is counted by its POST.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode

import anyio
import msgspec
import structlog
from litestar import Request, Response, delete, get, post
from litestar.params import FromQuery
from litestar.response.base import ASGIResponse

from corral.http.errors import ApiError, decode_body
from corral.http.worker_routes import STREAM_LOOKUP, STREAM_REPLAY, STREAM_STOP
from router.api.inference import relayed
from router.api.runtime import RouterRuntime, runtime
from router.relay.conversations import Claim, peer_key, session_key
from router.relay.peer_proxy import PeerUpstream
from router.relay.peers import PeerRoute
from router.relay.worker_upstream import WorkerUpstream
from router.scheduling.copies import conversation_key
from router.security.api_keys import relay_opt
from router.security.callers import caller_id
from router.workers.model_state import Status
from router.workers.worker_http import UpstreamError

__all__ = ["stream_routes"]

_log = structlog.get_logger("corral.streams")
# Lookups and stops are small questions to a local worker: a slow one is skipped, not waited on.
_QUICK_SECONDS = 1.0
AnyRequest = Request[Any, Any, Any]
# The worker's paths for a conversation's replay or stop, and for the lookup.
_STREAM, _LOOKUP = STREAM_REPLAY.paths[0].encode(), STREAM_LOOKUP.paths[0].encode()
Exchange = Callable[[str, bytes, bytes | None], Awaitable[tuple[int, bytes]]]


class LookupRequest(msgspec.Struct):
    conversation_ids: list[Any]


def _conversation(conv_id: str | None) -> str:
    if not conv_id:
        raise ApiError(400, "Missing conversation id in path")
    return conv_id


def _peer_owner(rt: RouterRuntime, claim: Claim | None) -> tuple[str, PeerRoute] | None:
    """The peer model that owns a conversation (its POST was relayed to a peer)."""
    if claim is None or claim.ended is not None or claim.model in rt.pool.models:
        return None
    route = rt.peers.route(claim.model, local=False)
    return (claim.model, route) if route is not None else None


def _stream_target(request: AnyRequest, key: str) -> bytes:
    """The replay's own path and query, with the id its worker (or peer) knows the session by."""
    pairs = parse_qsl(request.scope["query_string"].decode("latin-1"), keep_blank_values=True)
    query = [(k, v) for k, v in pairs if k != "conv_id"]
    return _STREAM + b"?" + urlencode([("conv_id", key), *query]).encode()


def _peer_sessions(answer: list[Any], asked: dict[str, str]) -> list[Any]:
    """A peer's lookup answer with the caller's ids for the peer's (``asked``: theirs → ours)."""
    found = []
    for item in answer:
        key = item.get("conversation_id") if isinstance(item, dict) else None
        if isinstance(key, str) and key in asked:
            found.append({**item, "conversation_id": asked[key]})
    return found


def _own_sessions(answer: list[Any], caller: str | None) -> list[Any]:
    """A worker's lookup answer with the caller's ids as the caller knows them."""
    if caller is None:
        return answer
    prefix = session_key(caller, "")
    found = []
    for item in answer:
        key = item.get("conversation_id") if isinstance(item, dict) else None
        if isinstance(key, str) and key.startswith(prefix):  # only what was asked comes back
            found.append({**item, "conversation_id": key.removeprefix(prefix)})
    return found


def _key_for(rt: RouterRuntime, model: str) -> tuple[bool, Callable[[str | None, str], str]]:
    """Whether ``model`` is a peer's, and how its worker or peer knows a caller's sessions."""
    peer = model not in rt.pool.models
    return peer, peer_key if peer else session_key


def _exchange(rt: RouterRuntime, model: str) -> Exchange | None:
    """How to ask the owner of a conversation a small question: its worker if it is up (not
    loading: a stop then withdraws the parked request instead), else its peer."""
    state = rt.pool.models.get(model)
    if state is None:
        route = rt.peers.route(model, local=False)
        return route.peer.exchange if route is not None else None
    client = state.client
    if client is None or state.status not in (Status.LOADED, Status.SLEEPING):
        return None
    return client.exchange


@get(STREAM_REPLAY.paths, opt=relay_opt(STREAM_REPLAY))
async def replay(request: AnyRequest, conv_id: FromQuery[str | None] = None) -> ASGIResponse:
    rt = runtime(request)
    claim = rt.conversations.find(caller_id(request.scope), _conversation(conv_id))
    remote = _peer_owner(rt, claim)
    if remote is not None and claim is not None:
        name, route = remote
        target = _stream_target(request, claim.peer_key)
        return await rt.relay.forward(
            relayed(request, name, None, target=target), PeerUpstream(route)
        )
    if claim is not None and claim.ended is not None:
        raise ApiError(404, f"Stream not found: {claim.ended}")
    if claim is None or claim.model not in rt.pool.models:
        raise ApiError(404, "Stream not found or expired")
    # The copy its conversation went to (``replicas``, router/scheduling/copies.py).
    state = rt.scheduler.copies.pick(claim.model, conversation_key(claim.conversation, None))
    if not claim.attached:  # its POST waits for the model's load, which will answer it
        raise ApiError(503, "Stream owner model is loading, retry later")
    # A lease for this request, never a load; a worker that began to stop as the replay reached
    # it is on its way out, and the session with it (router/relay/worker_upstream.py).
    target = _stream_target(request, claim.session_key)
    following = relayed(request, state.entry.name, None, target=target)
    return await rt.relay.relay(following, WorkerUpstream(rt.scheduler, state, replay=True))


@post(STREAM_LOOKUP.paths, status_code=200, opt=relay_opt(STREAM_LOOKUP))
async def lookup(request: AnyRequest) -> list[Any]:
    rt = runtime(request)
    caller = caller_id(request.scope)
    body = decode_body(await request.body(), LookupRequest)
    ids = [item for item in body.conversation_ids if isinstance(item, str) and item]
    found: list[Any] = []

    async def ask(model: str, exchange: Exchange, conversations: list[str]) -> None:
        peer, key = _key_for(rt, model)
        asked = {key(caller, conversation): conversation for conversation in conversations}
        question = msgspec.json.encode({"conversation_ids": list(asked)})
        try:
            with anyio.fail_after(_QUICK_SECONDS):
                status, answer = await exchange("POST", _LOOKUP, question)
        except (UpstreamError, TimeoutError) as exc:
            _log.warning("stream lookup failed", model=model, error=str(exc))
            return
        if status == 200:
            sessions = msgspec.json.decode(answer)
            own = _peer_sessions(sessions, asked) if peer else _own_sessions(sessions, caller)
            found.extend(own)

    async with anyio.create_task_group() as group:
        for model, conversations in rt.conversations.by_model(caller, ids).items():
            exchange = _exchange(rt, model)
            if exchange is not None:
                group.start_soon(ask, model, exchange, conversations)
    return found


@delete(STREAM_STOP.paths, status_code=204, opt=relay_opt(STREAM_STOP))
async def stop(request: AnyRequest, conv_id: FromQuery[str | None] = None) -> Response[None]:
    """204 whether or not the caller had such a session (idempotent): another key's stream is
    neither stopped nor told apart from one that never was."""
    rt = runtime(request)
    caller, conversation = caller_id(request.scope), _conversation(conv_id)
    model = rt.conversations.owner(caller, conversation)
    exchange = _exchange(rt, model) if model is not None else None
    # Forgotten first: a request still waiting for its model then knows it is not wanted.
    rt.conversations.forget(caller, conversation)
    if model is not None and exchange is not None:
        key = _key_for(rt, model)[1](caller, conversation)
        target = _STREAM + b"?" + urlencode({"conv_id": key}).encode()
        try:
            with anyio.fail_after(_QUICK_SECONDS):
                await exchange("DELETE", target, None)
        except (UpstreamError, TimeoutError) as exc:
            _log.warning("stream stop failed", model=model, error=str(exc))
    return Response(None, status_code=204)


stream_routes = [replay, lookup, stop]
