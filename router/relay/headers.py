"""The headers a request and its answer keep on their way through the router, and the target.

A worker or a peer gets the client's headers less what is the router's own business (its
credentials, hop-by-hop headers, the session's id, the page's Origin); the client gets the
answer's headers less what the router's own server adds (docs/protocol.md §3, §8), and every
answer's head is made safe to show on the router's origin (:func:`guarded_head`).
"""

from __future__ import annotations

from litestar.types import Scope

from corral.children.protocol import CACHE_SCOPE_HEADER, REQUEST_ID_HEADER
from corral.children.worker_key import WORKER_KEY_HEADER
from router.relay.conversations import Claim
from router.workers.worker_http import UpstreamResponse

__all__ = ["guarded_head", "request_headers", "request_target", "response_headers"]

_HOP_BY_HOP = {
    b"connection",
    b"keep-alive",
    b"transfer-encoding",
    b"content-length",
    b"te",
    b"upgrade",
    b"proxy-connection",
    b"host",
}
# Workers never see the router's credentials, and the worker key is the router's to send
# (docs/protocol.md §8); compression would defeat streaming; the router has read the whole body
# already, so a worker has nothing to say to "Expect: 100-continue". A session's id is the
# router's to give (the key's namespace, router/relay/conversations.py). The page's Origin was
# the router's to check (router/security/origins.py): to a worker, or a peer, the router is the
# client, and a worker refuses any request that carries one (worker/host/access.py). A cache
# scope is the router's to give (router/security/cache_scope.py): a client's own would reuse,
# and measure, another key's prompt caches.
_REQUEST_DROP = _HOP_BY_HOP | {
    b"authorization", b"x-api-key", WORKER_KEY_HEADER, b"accept-encoding", b"expect",
    b"x-conversation-id", b"origin", REQUEST_ID_HEADER, CACHE_SCOPE_HEADER,
}  # fmt: skip
# A translated request's body is the router's: the client's description of its own is wrong.
_TRANSLATED_DROP = {b"content-type", b"content-encoding"}
# The router's own server adds these; CORS is the router's business, not a worker's.
_RESPONSE_DROP = _HOP_BY_HOP | {b"server", b"date"}
# A relayed answer is shown on the router's own origin, the Web UI's: one a browser would render
# as a page (a peer's text/html, docs/security.md) would run its script with the Web UI's stored
# key and conversations. So an answer keeps only the types the APIs answer with (JSON, SSE,
# Prometheus' plain text, with their parameters; NDJSON: Ollama's streams, translated here); any
# other, or none, is bytes to save. The browser may not guess another type, and a page it
# renders anyway runs nothing.
_RELAYED_TYPES = frozenset(
    {b"application/json", b"text/event-stream", b"text/plain", b"application/x-ndjson"}
)
_OPAQUE_TYPE = b"application/octet-stream"
_GUARDS = [
    (b"x-content-type-options", b"nosniff"),
    (b"content-security-policy", b"sandbox; default-src 'none'"),
]
_GUARDED = {b"content-type"} | {name for name, _ in _GUARDS}


def request_target(scope: Scope) -> bytes:
    path: bytes = scope.get("raw_path") or scope["path"].encode()
    query: bytes = scope["query_string"]
    return path + b"?" + query if query else path


def request_headers(
    scope: Scope, session: Claim | None = None, *, translated: bool = False
) -> list[tuple[bytes, bytes]]:
    """The headers a worker or a peer gets: the session's id if it is one, and for a
    ``translated`` body the JSON content type of the body the router made."""
    # ASGI servers give header names in lower case.
    drop = _REQUEST_DROP | _TRANSLATED_DROP if translated else _REQUEST_DROP
    headers = [(k, v) for k, v in scope["headers"] if k not in drop]
    if session is not None:
        headers.append((b"x-conversation-id", session.session_key.encode("latin-1")))
    if translated:
        headers.append((b"content-type", b"application/json"))
    return headers


def response_headers(upstream: UpstreamResponse) -> list[tuple[bytes, bytes]]:
    return [
        (k, v)
        for k, v in upstream.headers
        if k not in _RESPONSE_DROP and not k.startswith(b"access-control-")
    ]


def guarded_head(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The head of every relayed answer, a worker's or a peer's, translated or not: its content
    type if one the APIs answer with, else ``application/octet-stream``, then ``nosniff`` and a
    sandboxing CSP (docs/security.md, Peers)."""
    types = [value for name, value in headers if name == b"content-type"]
    media = types[0] if len(types) == 1 and _relayed_type(types[0]) else _OPAQUE_TYPE
    kept = [(name, value) for name, value in headers if name not in _GUARDED]
    return [(b"content-type", media), *kept, *_GUARDS]


def _relayed_type(value: bytes) -> bool:
    return value.partition(b";")[0].strip().lower() in _RELAYED_TYPES
