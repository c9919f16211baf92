"""Whose prompt caches a request may reuse: its own key's (docs/security.md, "Another member of
the team").

A worker keeps what each prompt left in its KV cache (a slot's cells, a ``--cache-ram`` copy, a
file of the disk tier) and reuses the longest cached prefix for the next prompt, and every
answer says how many tokens it reused (``cached_tokens``, ``cache_n``). Shared by every key,
that count tells one key, token by token, what another key asked. So the router names each
request's cache scope in :data:`~corral.children.protocol.CACHE_SCOPE_HEADER`, and a worker
reuses a cached prefix only within its scope (docs/protocol.md §3). The scope is the request's
key id, or ``group:NAME`` for a key the key file puts in a group (``cache=NAME``: those keys
share their caches; a key id never holds a colon). A router without keys has one caller and
sends none: the worker's default scope, as when it is run alone. So does a router with
``--cache-share`` (router/services.py subscribes this only where
:attr:`~router.settings.ServeSettings.cache_scoped`): its keys share the caches, for the hits.
A client's own header of that name is dropped before this adds the router's
(router/relay/headers.py), and a peer never gets it (router/relay/peer_proxy.py sends an
allowlist): a peer scopes by the key the router presents to it.
"""

from __future__ import annotations

from corral.children.protocol import CACHE_SCOPE_HEADER
from router.relay.relayed import Outgoing
from router.security.callers import request_key

__all__ = ["add_cache_scope"]


def add_cache_scope(outgoing: Outgoing) -> None:
    """The relay's ``dispatching`` subscriber: the request leaves with its key's scope."""
    key = request_key(outgoing.hop.relayed.scope)
    if key is not None:
        name = key.id if key.cache_group is None else f"group:{key.cache_group}"
        outgoing.headers.append((CACHE_SCOPE_HEADER, name.encode()))
