"""SSE pings on a silent stream (``--sse-ping-interval``), as llama-server sends them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from worker.answer.sse_pings import PING, with_pings
from worker.settings.parse import parse_worker_args

pytestmark = pytest.mark.anyio


class _Source:
    """Two events with a silence between them that lasts until the test ends it."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.closed = False

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            yield b"data: 1\n\n"
            await self.release.wait()
            yield b"data: 2\n\n"
        finally:
            self.closed = True


async def test_a_silent_stream_gets_pings_and_loses_nothing() -> None:
    source = _Source()
    seen: list[bytes] = []
    async for chunk in with_pings(source.chunks(), 0.01):
        seen.append(chunk)
        if seen.count(PING) == 2:
            source.release.set()  # the silence ends only once two pings went out
    assert seen[:3] == [b"data: 1\n\n", PING, PING]
    assert [chunk for chunk in seen if chunk != PING] == [b"data: 1\n\n", b"data: 2\n\n"]
    assert source.closed


async def test_closing_the_stream_during_a_silence_closes_its_source() -> None:
    source = _Source()
    stream = with_pings(source.chunks(), 0.01)
    assert await anext(stream) == b"data: 1\n\n"
    assert await anext(stream) == PING
    await stream.aclose()  # the client went away while the source was waiting
    assert source.closed


async def test_no_interval_no_pings() -> None:
    source = _Source()
    stream = with_pings(source.chunks(), -1)
    assert await anext(stream) == b"data: 1\n\n"
    waiting = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0.05)  # a silence a 0.01 s interval would have filled with pings
    source.release.set()
    assert await waiting == b"data: 2\n\n"


def test_the_interval_is_llama_servers_default_unless_given() -> None:
    assert parse_worker_args(["-m", "m.gguf"]).sse_ping_interval == 30
    assert parse_worker_args(["-m", "m.gguf", "--sse-ping-interval", "5"]).sse_ping_interval == 5
