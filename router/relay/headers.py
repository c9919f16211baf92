"""The headers a request and its answer keep on their way through the router, and the target.

A worker or a peer gets the client's headers less what is the router's own business (its
credentials, hop-by-hop headers, the session's id, the page's Origin); the client gets the
answer's headers less what the router's own server adds (docs/protocol.md §3, §8).
"""

from __future__ import annotations

from litestar.types import Scope

from corral.children.protocol import CACHE_SCOPE_HEADER, REQUEST_ID_HEADER
from corral.children.worker_key import WORKER_KEY_HEADER
from router.relay.conversations import Claim
from router.workers.worker_http import UpstreamResponse

__all__ = ["request_headers", "request_target", "response_headers"]

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
