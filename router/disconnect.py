"""Noticing that a client left while its request is still being worked on.

Litestar cancels a *streaming* response when the client disconnects, but not a handler that is
still awaiting something (a model load, a non-streaming generation). :func:`until_disconnected`
races the work against the ASGI ``http.disconnect`` message, so the work is cancelled at once.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar

import anyio
from litestar import Request

from router.errors import ApiError

__all__ = ["ClientDisconnected", "until_disconnected"]

T = TypeVar("T")


class ClientDisconnected(ApiError):
    def __init__(self) -> None:
        # 499 is nginx's "client closed request": nobody reads it, but the logs say what happened.
        super().__init__(499, "client closed the request", "client_disconnected")


async def until_disconnected(request: Request[Any, Any, Any], work: Awaitable[T]) -> T:
    """Await ``work`` unless the client disconnects first. The body must already be read."""
    result: list[T] = []
    failure: list[Exception] = []
    gone = False

    async with anyio.create_task_group() as group:

        async def do() -> None:
            # Caught here so the caller sees the error itself, not an ExceptionGroup.
            try:
                result.append(await work)
            except Exception as exc:
                failure.append(exc)
            group.cancel_scope.cancel()

        async def watch() -> None:
            nonlocal gone
            while (await request.receive())["type"] != "http.disconnect":
                pass
            gone = True
            group.cancel_scope.cancel()

        group.start_soon(do)
        group.start_soon(watch)
    if failure:
        raise failure[0]
    if gone and not result:
        raise ClientDisconnected
    return result[0]
