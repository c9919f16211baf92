"""Noticing that a client left while its request is still being worked on.

Litestar cancels a *streaming* response when the client disconnects, but not a handler that is
still awaiting something (a model load, a non-streaming generation). :func:`until_disconnected`
races the work against the ASGI ``http.disconnect`` message, so the work is cancelled at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

import anyio
from litestar import Request
from litestar.types import Receive

from corral.http.errors import ApiError

__all__ = ["ClientDisconnected", "cancel_on_disconnect", "client_left", "until_disconnected"]

T = TypeVar("T")


class ClientDisconnected(ApiError):
    def __init__(self) -> None:
        # 499 is nginx's "client closed request": nobody reads it, but the logs say what happened.
        super().__init__(499, "client closed the request", "client_disconnected")


async def client_left(receive: Receive) -> None:
    """Return when the client leaves (after the body, only a disconnect can come)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    """Cancel ``scope`` when the client leaves."""
    await client_left(receive)
    scope.cancel()


async def until_disconnected(request: Request[Any, Any, Any], work: Awaitable[T]) -> T:
    """Await ``work`` unless the client disconnects first. The body must already be read.

    Every proxied request comes through here, so the watcher is one bare task, cancelled as soon
    as the work is done, rather than a task group (which cost about 0.1 ms per request).
    """
    with anyio.CancelScope() as scope:
        watcher = asyncio.ensure_future(cancel_on_disconnect(request.receive, scope))
        try:
            return await work
        finally:
            watcher.cancel()
    raise ClientDisconnected
