"""Resumable streams (docs/protocol.md §5): a generation's SSE bytes, kept for a returning client.

A streaming request with ``X-Conversation-Id`` runs detached from its client: a producer task
tees every byte of the response (``[DONE]`` included) into the conversation's session, and the
client, like any later reader, only reads the session from some byte offset. So a browser that
reloads loses nothing, and only ``DELETE /v1/stream`` stops the generation.

Each session is a ring of at most ``max_bytes`` (the oldest bytes go first), kept ``ttl`` seconds
after it completes and swept every ``gc_interval`` seconds. The three numbers come from the
environment (``CORRAL_STREAM_*``) so that tests can make them small.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import anyio

__all__ = ["OffsetLost", "StreamSession", "StreamSessions", "StreamSettings"]


class OffsetLost(Exception):
    """The reader asked for bytes the ring has already dropped."""


_MAX_BYTES, _TTL, _GC_INTERVAL = 4 * 1024 * 1024, 300.0, 60.0  # upstream's constants


@dataclass(frozen=True, slots=True)
class StreamSettings:
    max_bytes: int = _MAX_BYTES
    ttl: float = _TTL
    gc_interval: float = _GC_INTERVAL

    @classmethod
    def from_environment(cls) -> StreamSettings:
        env = os.environ
        return cls(
            max_bytes=int(env.get("CORRAL_STREAM_MAX_BYTES", _MAX_BYTES)),
            ttl=float(env.get("CORRAL_STREAM_TTL_SECONDS", _TTL)),
            gc_interval=float(env.get("CORRAL_STREAM_GC_SECONDS", _GC_INTERVAL)),
        )


@dataclass(eq=False)
class StreamSession:
    key: str
    max_bytes: int
    started_at: float = field(default_factory=time.time)
    completed_at: float = 0.0
    dropped: int = 0  # bytes that fell off the front of the ring
    cancel: Callable[[], None] = lambda: None
    _buffer: bytearray = field(default_factory=bytearray)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def total_bytes(self) -> int:
        return self.dropped + len(self._buffer)

    @property
    def done(self) -> bool:
        return self.completed_at > 0

    def append(self, data: bytes) -> None:
        self._buffer += data
        excess = len(self._buffer) - self.max_bytes
        if excess > 0:
            del self._buffer[:excess]
            self.dropped += excess
        self._wake_readers()

    def finish(self) -> None:
        if not self.done:
            self.completed_at = time.time()
            self._wake_readers()

    def _wake_readers(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def check_offset(self, offset: int) -> None:
        if offset < self.dropped:
            raise OffsetLost

    async def read(self, offset: int) -> AsyncIterator[bytes]:
        """The bytes from ``offset`` on, then live ones until the session completes."""
        while True:
            if offset < self.dropped:  # fell behind the ring: this reader's stream ends
                return
            start = offset - self.dropped
            if start < len(self._buffer):
                chunk = bytes(self._buffer[start:])
                offset += len(chunk)
                yield chunk
                continue
            if self.done:
                return
            await self._changed.wait()

    def describe(self) -> dict[str, object]:
        return {
            "conversation_id": self.key,
            "is_done": self.done,
            "total_bytes": self.total_bytes,
            "started_at": int(self.started_at),
            "completed_at": int(self.completed_at),
        }


class StreamSessions:
    def __init__(self, settings: StreamSettings) -> None:
        self.settings = settings
        self._sessions: dict[str, StreamSession] = {}
        self._producers: set[asyncio.Task[None]] = set()  # referenced, or the loop may drop them

    def produce(self, key: str, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """Run ``chunks`` into a new session for ``key``; return the first client's stream.

        The first client gets every byte straight from the producer (a tee), not through the
        ring, so a slow client never loses its own answer; when it leaves, only its queue goes.
        """
        session = self.open(key)
        live: asyncio.Queue[bytes | None] = asyncio.Queue()
        attached = True

        async def tee() -> None:
            try:
                async for chunk in chunks:
                    session.append(chunk)
                    if attached:
                        live.put_nowait(chunk)
            finally:
                session.finish()
                live.put_nowait(None)
                aclose = getattr(chunks, "aclose", None)
                if aclose is not None:
                    await aclose()

        async def first_client() -> AsyncIterator[bytes]:
            nonlocal attached
            try:
                while (chunk := await live.get()) is not None:
                    yield chunk
            finally:
                attached = False

        task = asyncio.get_running_loop().create_task(tee())
        self._producers.add(task)
        task.add_done_callback(self._producers.discard)

        def cancel() -> None:
            task.cancel()

        session.cancel = cancel
        return first_client()

    def open(self, key: str) -> StreamSession:
        """A fresh session for ``key``; a live one with the same key is cancelled first."""
        self.delete(key)
        session = StreamSession(key, self.settings.max_bytes)
        self._sessions[key] = session
        return session

    def get(self, key: str) -> StreamSession | None:
        return self._sessions.get(key)

    def delete(self, key: str) -> None:
        session = self._sessions.pop(key, None)
        if session is not None:
            session.cancel()
            session.finish()

    def lookup(self, ids: list[str]) -> list[dict[str, object]]:
        """Sessions for exactly these ids, and ``id::model`` keys; never a listing of others."""
        wanted = set(ids)
        return [
            session.describe()
            for key, session in self._sessions.items()
            if key in wanted or key.split("::", 1)[0] in wanted
        ]

    def sweep(self, now: float | None = None) -> None:
        now = time.time() if now is None else now
        expired = [
            key
            for key, session in self._sessions.items()
            if session.done and now - session.completed_at >= self.settings.ttl
        ]
        for key in expired:
            del self._sessions[key]

    async def sweep_forever(self) -> None:
        while True:
            await anyio.sleep(self.settings.gc_interval)
            self.sweep()
