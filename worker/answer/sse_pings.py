"""SSE pings: a comment line on a stream that has been silent too long (``--sse-ping-interval``).

llama-server sends ``:`` and a blank line when no event came for that many seconds (default
30), because some clients (undici, behind Node's ``fetch``) give up on a silent connection: a
prompt still being read, or a request waiting for a slot. SSE clients skip comments. Pings go
only to the live answer, never into a resumable session's record (its offsets stay the same).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator

__all__ = ["PING", "with_pings"]

PING = b":\n\n"


async def with_pings(chunks: AsyncIterator[bytes], interval: float) -> AsyncGenerator[bytes, None]:
    """``chunks`` as they come, and :data:`PING` after each ``interval`` seconds without one;
    ``interval <= 0``: never. Closing this closes ``chunks``."""
    if interval <= 0:
        async for chunk in chunks:
            yield chunk
        return
    pending: asyncio.Future[bytes] = asyncio.ensure_future(anext(chunks))
    try:
        while True:
            done, _ = await asyncio.wait({pending}, timeout=interval)
            if not done:
                yield PING
                continue
            try:
                chunk = pending.result()
            except StopAsyncIteration:
                return
            yield chunk
            pending = asyncio.ensure_future(anext(chunks))
    finally:
        # The source must be idle before it can be closed.
        pending.cancel()
        with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
            await pending
        closing = getattr(chunks, "aclose", None)
        if closing is not None:
            await closing()
