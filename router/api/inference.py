"""Proxied routes (docs/protocol.md §3).

The model comes from the JSON body (POST) or ``?model=`` (GET).
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, get, post
from litestar.params import FromQuery
from litestar.response.base import ASGIResponse

from corral.http.errors import ApiError, decode_body
from corral.http.worker_routes import (
    MAX_AUDIO_UPLOAD,
    METRICS,
    SLOT_ACTION,
    SLOTS,
    SPEECH,
    SPEECH_REFUSAL,
    TRANSCRIPTIONS,
    Relay,
    audio_upload_refusal,
    relayed_paths,
)
from router.api.disclosure import JsonRewrite, error_for_caller, slots_for_inference
from router.api.metrics import render_metrics
from router.api.runtime import RouterRuntime, runtime
from router.relay.peer_proxy import PeerUpstream
from router.relay.relayed import Relayed
from router.relay.translation import AnswerTranslation
from router.relay.worker_upstream import WorkerUpstream
from router.scheduling.answers import scheduling_answered
from router.scheduling.leases import bind
from router.security.api_keys import is_uncounted, relay_opt
from router.security.callers import caller_id, is_admin, queue_caller
from router.security.rate_limits import LimitExceeded
from router.single_model import single_model_target

__all__ = ["PROXIED_GET", "PROXIED_POST", "forward_to_model", "inference_routes", "relayed"]

# The paths relayed as they are, the model read from the body or ``?model=``; the worker's
# others are relayed by handlers of their own or not at all (corral/http/worker_routes.py).
PROXIED_POST = relayed_paths(Relay.BODY, "POST")
PROXIED_GET = relayed_paths(Relay.QUERY, "GET")
# What an inference key is not shown of a relayed GET's answer (router/api/disclosure.py), by
# the route's path.
_FOR_INFERENCE = {path: slots_for_inference for path in SLOTS.paths}


class RouteKey(msgspec.Struct):
    """The only part of a body the router reads; the rest is forwarded untouched."""

    model: str | None = None


async def forward_to_model(
    request: Request[Any, Any, Any],
    name: str | None,
    body: bytes | None,
    *,
    target: bytes | None = None,
    translation: AnswerTranslation | None = None,
) -> ASGIResponse:
    """Relay a request to the worker (or the peer) of the model it names. ``target`` and
    ``translation``: an API the router translates (router/relay/translation.py), asked of a
    worker or a peer alike on the OpenAI-compatible route ``target``."""
    rt = runtime(request)
    name = single_model_target(rt.settings, rt.pool.catalogue, name)
    if not name:
        raise ApiError(400, "model name is missing from the request")
    # request.url.path, without building the URL (a parse per request) for it
    path = request.scope.get("root_path", "") + request.scope["path"]
    try:
        response = await _forward_to(request, rt, name, body, target, translation)
    except ApiError as exc:
        rt.requests.count(path, exc.status)
        raise
    rt.requests.count(path, response.status_code)
    return response


def relayed(request: Request[Any, Any, Any], name: str, body: bytes | None, **how: Any) -> Relayed:
    """The request for the model ``name`` as the relay carries it (router/relay/relayed.py):
    its key and class, and whether it is a generation that takes one of the model's slots (a
    POST a key's ``concurrency`` counts)."""
    scope = request.scope
    counted = request.method == "POST" and not is_uncounted(scope)
    return Relayed(request, name, body, queue_caller(scope), counted, **how)


async def _forward_to(
    request: Request[Any, Any, Any],
    rt: RouterRuntime,
    name: str,
    body: bytes | None,
    target: bytes | None = None,
    translation: AnswerTranslation | None = None,
) -> ASGIResponse:
    # A resumable session (docs/protocol.md §5), its key's (router/relay/conversations.py).
    conversation = request.headers.get("x-conversation-id") if request.method == "POST" else None
    if conversation:  # it may go on for nobody: counted until it ends, client or not
        try:
            bind(request.scope, rt.sessions.admit(queue_caller(request.scope).share))
        except LimitExceeded as exc:
            raise exc.answer() from None
    caller = caller_id(request.scope)
    how = {"target": target, "translation": translation}
    peer = rt.peers.route(name, local=rt.pool.catalogue.resolve(name) is not None)
    if peer is not None:  # replays of a session go to the same peer (api/streams.py)
        claimed = rt.conversations.claim(caller, conversation, name) if conversation else None
        return await rt.relay.forward(
            relayed(request, name, body, session=claimed, **how), PeerUpstream(peer)
        )
    with scheduling_answered():
        state = rt.pool.get(name)
    name = state.entry.name  # the canonical name, whatever the request called it
    session = rt.conversations.claim(caller, conversation, name) if conversation else None
    autoload = rt.settings.autoload.wanted(request.query_params.get("autoload"))
    try:
        return await rt.relay.forward(
            relayed(request, name, body, autoload=autoload, session=session, **how),
            WorkerUpstream(rt.scheduler, state),
        )
    except ApiError as exc:
        if session is not None:  # replays are told why the session never started
            session.fail(error_for_caller(request.scope, exc).message)
        raise


@post(PROXIED_POST, status_code=200)
async def proxy_post(request: Request[Any, Any, Any]) -> ASGIResponse:
    body = await request.body()
    return await forward_to_model(request, decode_body(body, RouteKey).model, body)


@post(SLOT_ACTION.paths, status_code=200, opt=relay_opt(SLOT_ACTION))
async def slot_action(
    request: Request[Any, Any, Any], model: FromQuery[str | None] = None
) -> ASGIResponse:
    """Slot save/restore/erase: the model from the body, as upstream's router reads it, or from
    ``?model=``; erase has no body at all. Management: it writes files on the server."""
    body = await request.body()
    named = decode_body(body, RouteKey).model if body.strip() else None
    return await forward_to_model(request, named or model, body)


@get(PROXIED_GET)
async def proxy_get(
    request: Request[Any, Any, Any], model: FromQuery[str | None] = None
) -> ASGIResponse:
    rewrite = _FOR_INFERENCE.get(request.scope["path_template"])
    hidden = None if rewrite is None or is_admin(request.scope) else JsonRewrite(rewrite)
    return await forward_to_model(request, model, None, translation=hidden)


@get(METRICS.paths)
async def metrics(
    request: Request[Any, Any, Any], model: FromQuery[str | None] = None
) -> ASGIResponse:
    """The router's own metrics; ``?model=X`` proxies to that worker's ``llamacpp:*`` metrics,
    and so does single-model mode, as llama-server with one model answers with its own."""
    rt = runtime(request)
    if model is not None or rt.settings.single_model:
        return await forward_to_model(request, model, None)
    by_key = is_admin(request.scope)
    text = render_metrics(rt.pool, rt.scheduler, rt.requests, rt.peers.stats(), by_key=by_key)
    return ASGIResponse(
        body=text.encode(),
        media_type="text/plain; version=0.0.4; charset=utf-8",
    )


@post(TRANSCRIPTIONS.paths, status_code=200, opt=relay_opt(TRANSCRIPTIONS))
async def transcriptions(request: Request[Any, Any, Any]) -> ASGIResponse:
    """The model from the multipart form's ``model`` field, as llama-server's router reads it;
    the upload goes on untouched, refused first when it is larger than one may be."""
    body = await request.body()
    if len(body) > MAX_AUDIO_UPLOAD:
        raise ApiError(413, audio_upload_refusal(len(body)))
    model = (await request.form()).get("model")
    return await forward_to_model(request, model if isinstance(model, str) else None, body)


@post(SPEECH.paths, status_code=200, opt=relay_opt(SPEECH))
async def speech() -> None:
    """Refused here, whatever the model: none of them speaks, so none is loaded to say so."""
    raise ApiError(501, SPEECH_REFUSAL)


inference_routes = [proxy_post, slot_action, proxy_get, metrics, transcriptions, speech]
