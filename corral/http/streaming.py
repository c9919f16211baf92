"""A streaming response whose iterator is always closed, on success, error and disconnect alike.

Litestar turns a client disconnect into a cancellation but never calls ``aclose()`` on the
iterator, so an upstream stream (router) or a generation (worker) could keep running until garbage
collection. Closing it here makes cleanup deterministic. The close is shielded because the task is
already cancelled: an unshielded ``await`` inside ``aclose()`` (releasing the upstream connection,
stopping the generation) would be cancelled at once and the cleanup skipped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
from litestar.response.streaming import ASGIStreamingResponse
from litestar.types import Receive, Send

__all__ = ["SSE_HEADERS", "ClosingStreamingResponse"]

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class ClosingStreamingResponse(ASGIStreamingResponse):
    async def send_body(self, send: Send, receive: Receive) -> None:
        try:
            await super().send_body(send, receive)
        finally:
            iterator = self.iterator
            if isinstance(iterator, AsyncIterator) and hasattr(iterator, "aclose"):
                with anyio.CancelScope(shield=True):
                    await iterator.aclose()
