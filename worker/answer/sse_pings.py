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


_END = object()


async def with_pings(chunks: AsyncIterator[bytes], interval: float) -> AsyncGenerator[bytes, None]:
    """``chunks`` as they come, and :data:`PING` after each ``interval`` seconds without one;
    ``interval <= 0``: never. Closing this closes ``chunks``."""
    if interval <= 0:
        async for chunk in chunks:
            yield chunk
        return
    # One reader task for the whole stream and a timer per wait: no task per chunk.
    queue: asyncio.Queue[object] = asyncio.Queue()

    async def read() -> None:
        try:
            async for chunk in chunks:
                queue.put_nowait(chunk)
        except Exception as exc:  # handed to the reader of this stream, raised there
            queue.put_nowait(exc)
        else:
            queue.put_nowait(_END)

    loop = asyncio.get_running_loop()
    reader = loop.create_task(read())
    try:
        while True:
            timer = loop.call_later(interval, queue.put_nowait, PING)
            try:
                item = await queue.get()
            finally:
                timer.cancel()
            if item is _END:
                return
            if isinstance(item, Exception):
                raise item
            assert isinstance(item, bytes)
            yield item
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
        closing = getattr(chunks, "aclose", None)
        if closing is not None:
            await closing()
