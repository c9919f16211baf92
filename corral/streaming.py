"""A streaming response whose iterator is always closed, on success, error and disconnect alike.

Litestar turns a client disconnect into a cancellation but never calls ``aclose()`` on the
iterator, so an upstream stream (router) or a generation (worker) could keep running until garbage
collection. Closing it here, shielded, makes cleanup deterministic (see python-stack notes §1.1).
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
