"""The cache scope a request leaves the router with (docs/protocol.md §3): its key's id, never
the client's own header, and none without keys (the worker's default scope). What the worker
does with it is tested over HTTP in test_cache_scope_e2e.py."""

from __future__ import annotations

from typing import Any, cast

from litestar import Request

from corral.children.protocol import CACHE_SCOPE_HEADER
from router.relay.headers import request_headers
from router.relay.relayed import Hop, Outgoing, Relayed
from router.scheduling.waiting_line import Caller
from router.security.api_keys import ApiKey, KeyScope, key_id
from router.security.cache_scope import add_cache_scope
from router.security.callers import remember_key
from router.workers.worker_http import WorkerClient


def _leaving(key: ApiKey | None) -> list[tuple[bytes, bytes]]:
    """The headers a chat request sent with ``key`` (and a forged scope) leaves with."""
    scope: dict[str, Any] = {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (CACHE_SCOPE_HEADER, b"forged")],
    }
    remember_key(cast("Any", scope), key)
    relayed = Relayed(Request(cast("Any", scope)), "alpha", b"{}", Caller())
    outgoing = Outgoing(Hop(relayed, cast("WorkerClient", None)), request_headers(relayed.scope))
    add_cache_scope(outgoing)
    return outgoing.headers


def test_a_request_leaves_with_its_keys_scope_and_not_the_clients() -> None:
    key = ApiKey("cache-scope-key-a", KeyScope.INFERENCE)
    scopes = [value for name, value in _leaving(key) if name == CACHE_SCOPE_HEADER]
    assert scopes == [key_id(key.secret).encode()]


def test_keys_of_a_cache_group_share_its_scope() -> None:
    key = ApiKey("cache-scope-key-c", KeyScope.INFERENCE, cache_group="team")
    assert (CACHE_SCOPE_HEADER, b"group:team") in _leaving(key)


def test_without_keys_no_scope_is_sent_and_a_forged_one_is_dropped() -> None:
    assert all(name != CACHE_SCOPE_HEADER for name, _ in _leaving(None))
