"""Relaying a request to the peer that answers for its model (docs/scaling.md).

The same relay as to a local worker (router/relay/proxy.py): bytes through as they come, a
client disconnect closes the peer connection, which stops the peer's generation (or, with
``X-Conversation-Id``, leaves it running for replay on a Corral peer, and relays it to its end,
as a local worker's). What differs is this upstream's: the body's ``model`` is renamed when the
peer has a prefix, the router's own key is replaced by the peer's, and failures of the peer are
502s that name it.

A peer is another party (docs/security.md, Peers): it gets only the headers that describe the
request, never the client's cookies, credentials or addresses, and only the headers that
describe its answer come back, never one that acts on the router's origin (``Set-Cookie``,
``Clear-Site-Data``, ``Strict-Transport-Security``...); and its content type only if it is one
the APIs answer with, as every relayed answer's (router/relay/headers.py, ``guarded_head``).
"""

from __future__ import annotations

import time
from urllib.parse import parse_qsl, urlencode

import anyio
import msgspec

from corral.http.errors import ApiError
from router.relay.peers import PeerRoute
from router.relay.relayed import Headers, Hop, Relayed
from router.workers.worker_http import UpstreamError, UpstreamResponse

__all__ = ["PeerUpstream"]

# The peer's own refusal of our key is the operator's problem, not the client's: a 502 that
# says so, rather than a 401 that would look like the client's key was wrong.
_REFUSED = (401, 403)
# Its reason is read whole, as far as this and for as long as that (the rest is not needed).
_REFUSAL_MAX_BYTES = 1 << 20
_REFUSAL_SECONDS = 10.0
# What a request tells a peer (docs/scaling.md): ASGI names are lower case. Content-Length is
# the relay's own; the peer's key is added, and a session's id for peers (conversations.py).
_TO_PEER = frozenset({
    b"accept", b"content-type", b"content-encoding", b"user-agent",
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


class PeerUpstream:
    """The peer that answers for a model (docs/scaling.md), as the relay's upstream
    (router/relay/proxy.py): one per request."""

    def __init__(self, route: PeerRoute) -> None:
        self._peer, self._remote = route.peer, route.remote
        self._started = 0.0

    async def open(self, relayed: Relayed) -> Hop:
        self._started = time.monotonic()
        return Hop(relayed, self._peer.client)

    def outgoing(
        self, relayed: Relayed, headers: Headers, target: bytes
    ) -> tuple[Headers, bytes, bytes | None]:
        body = relayed.body
        target = self._peer.config.base_path.encode() + target
        if self._remote != relayed.name:
            target = _renamed_target(target, self._remote)
            if body:
                body = _renamed_body(body, self._remote)
        kept = [(k, v) for k, v in headers if k in _TO_PEER]
        if relayed.session is not None:
            kept.append((b"x-conversation-id", relayed.session.peer_key.encode()))
        return kept + self._peer.auth_headers(), target, body

    def failed(self, hop: Hop, error: UpstreamError) -> ApiError:
        self._peer.stats.errors += 1
        return ApiError(502, f"peer '{self._peer.name}' is unreachable: {error}")

    async def answered(self, hop: Hop, answer: UpstreamResponse) -> None:
        stats = self._peer.stats
        stats.seconds += time.monotonic() - self._started
        stats.responses[answer.status] += 1
        if answer.status in _REFUSED:
            stats.errors += 1
            reason = b""
            try:
                with anyio.move_on_after(_REFUSAL_SECONDS):
                    reason = await answer.read(_REFUSAL_MAX_BYTES)
            except UpstreamError:
                pass
            finally:
                answer.close()
            raise _refusal(self._peer.name, answer.status, reason)
        answer.headers[:] = [(k, v) for k, v in answer.headers if _from_peer(k)]

    def cut(self, hop: Hop, error: UpstreamError) -> ApiError:
        self._peer.stats.errors += 1
        return ApiError(502, f"peer '{self._peer.name}' stopped while answering: {error}")
