"""Relaying a request to the peer that answers for its model (docs/scaling.md).

The same relay as to a local worker (router.relay.proxy): bytes through as they come, a client
disconnect closes the peer connection, which stops the peer's generation (or, with
``X-Conversation-Id``, leaves it running for replay on a Corral peer, and relays it to its end,
as a local worker's). What differs: the body's
``model`` is renamed when the peer has a prefix, the router's own key is replaced by the peer's,
and failures of the peer are 502s that name it.

A peer is another party (docs/security.md, Peers): it gets only the headers that describe the
request, never the client's cookies, credentials or addresses, and only the headers that
describe its answer come back, never one that acts on the router's origin (``Set-Cookie``,
``Clear-Site-Data``, ``Strict-Transport-Security``...).
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qsl, urlencode

import anyio
import msgspec
from litestar import Request
from litestar.response.base import ASGIResponse

from corral.http.disconnect import until_disconnected
from corral.http.errors import ApiError
from router.observe.requests import begin_request, client_traceparent
from router.relay.conversations import Claim
from router.relay.headers import request_headers, request_target
from router.relay.peers import PeerRoute
from router.relay.proxy import WHOLE_BELOW, RelayResponse
from router.relay.translation import AnswerTranslation
from router.security.callers import queue_caller
from router.workers.worker_http import UpstreamError

__all__ = ["forward_to_peer"]

# The peer's own refusal of our key is the operator's problem, not the client's: a 502 that
# says so, rather than a 401 that would look like the client's key was wrong.
_REFUSED = (401, 403)
# Its reason is read whole, as far as this and for as long as that (the rest is not needed).
_REFUSAL_MAX_BYTES = 1 << 20
_REFUSAL_SECONDS = 10.0
# What a request tells a peer (docs/scaling.md): ASGI names are lower case. Content-Length is
# the relay's own; the peer's key is added.
_TO_PEER = frozenset({
    b"accept", b"content-type", b"content-encoding", b"user-agent", b"x-conversation-id",
    b"anthropic-version", b"anthropic-beta",
})  # fmt: skip
# What comes back from it: what describes the body, and what tells a client when to retry.
_FROM_PEER = frozenset({
    b"content-type", b"content-encoding", b"content-language", b"cache-control",
    b"x-accel-buffering", b"retry-after", b"x-should-retry", b"x-request-id",
    b"process-start-time-unix",
})  # fmt: skip


def _from_peer(name: bytes) -> bool:
    return name in _FROM_PEER or name.startswith(b"x-ratelimit-")


def _renamed_body(body: bytes, remote: str) -> bytes:
    document = msgspec.json.decode(body)
    if isinstance(document, dict):
        document["model"] = remote
    return msgspec.json.encode(document)


def _renamed_target(target: bytes, remote: str) -> bytes:
    path, _, query = target.partition(b"?")
    pairs = [(k, remote if k == "model" else v) for k, v in parse_qsl(query.decode())]
    return path + b"?" + urlencode(pairs).encode() if pairs else path


def _refusal(peer_name: str, status: int, body: bytes) -> ApiError:
    try:
        reason = str(msgspec.json.decode(body)["error"]["message"])
    except (msgspec.DecodeError, KeyError, TypeError):
        reason = body.decode(errors="replace").strip()[:200]
    return ApiError(
        502,
        f"peer '{peer_name}' refused the request with {status} ({reason or 'no reason given'});"
        " check the peer's api-key in the preset",
    )


async def forward_to_peer(
    request: Request[Any, Any, Any],
    name: str,
    route: PeerRoute,
    body: bytes | None,
    *,
    session: Claim | None = None,
    target: bytes | None = None,
    translation: AnswerTranslation | None = None,
) -> ASGIResponse:
    """Send the request to the peer; ``session``, ``target`` and ``translation`` as for a
    local worker (router.relay.proxy.forward)."""
    peer, stats = route.peer, route.peer.stats
    scope = request.scope
    who = queue_caller(scope)
    record = begin_request(name, who.key, scope["path"], client_traceparent(scope), who.priority)
    sent = request_headers(request.scope, session, translated=translation is not None)
    headers = [(k, v) for k, v in sent if k in _TO_PEER]
    target = peer.config.base_path.encode() + (target or request_target(request.scope))
    detached = session is not None
    if route.remote != name:
        target = _renamed_target(target, route.remote)
        if body:
            body = _renamed_body(body, route.remote)
    headers += peer.auth_headers()
    started = time.monotonic()
    if record is not None:
        record.dispatched_now()
    try:
        sending = peer.client.request(
            request.method, target, headers, body, whole_below=WHOLE_BELOW
        )
        upstream = await (sending if detached else until_disconnected(request, sending))
    except UpstreamError as exc:
        stats.errors += 1
        raise ApiError(502, f"peer '{peer.name}' is unreachable: {exc}") from None
    stats.seconds += time.monotonic() - started
    stats.responses[upstream.status] += 1
    if upstream.status in _REFUSED:
        stats.errors += 1
        answer = b""
        try:
            with anyio.move_on_after(_REFUSAL_SECONDS):
                answer = await upstream.read(_REFUSAL_MAX_BYTES)
        except UpstreamError:
            pass
        finally:
            upstream.close()
        raise _refusal(peer.name, upstream.status, answer)
    upstream.headers[:] = [(k, v) for k, v in upstream.headers if _from_peer(k)]

    def cut_error(exc: UpstreamError) -> ApiError:
        stats.errors += 1
        return ApiError(502, f"peer '{peer.name}' stopped while answering: {exc}")

    return RelayResponse(
        upstream,
        name,
        progress=lambda: None,
        first_piece=record.chunk if record is not None else lambda: None,
        cut_error=cut_error,
        translation=translation,
        detached=detached,
    )
