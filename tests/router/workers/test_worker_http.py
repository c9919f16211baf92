"""The router's HTTP client for its workers, against a loopback server that answers as told."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import anyio.lowlevel
import pytest

from router.workers.worker_http import PAUSE_ABOVE, UpstreamError, UpstreamResponse, WorkerClient

pytestmark = pytest.mark.anyio

Answer = Callable[[asyncio.StreamWriter], Awaitable[None]]


class Upstream:
    """Accepts connections, reads whole requests, and answers each with the current ``answer``."""

    def __init__(self) -> None:
        self.answer: Answer = _reply(b"ok")
        self.requests: list[tuple[int, bytes]] = []  # (connection number, request as sent)
        self.connections = 0
        self.ended = 0  # connections the client closed
        self.client_left = asyncio.Event()
        self.port = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        number = self.connections
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (int(line.split(b":")[1]) for line in head.split(b"\r\n")
                     if line.lower().startswith(b"content-length:")),
                    0,
                )  # fmt: skip
                self.requests.append((number, head + await reader.readexactly(length)))
                await self.answer(writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            self.ended += 1
            self.client_left.set()
        finally:
            writer.close()


def _reply(body: bytes, *extra: bytes) -> Answer:
    async def answer(writer: asyncio.StreamWriter) -> None:
        head = [b"HTTP/1.1 200 OK", b"content-type: application/json", *extra]
        head.append(b"content-length: %d" % len(body))
        writer.write(b"\r\n".join(head) + b"\r\n\r\n" + body)

    return answer


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    server = Upstream()
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    server.port = listener.sockets[0].getsockname()[1]
    async with listener:
        yield server


async def _post(client: WorkerClient, body: bytes = b"{}") -> UpstreamResponse:
    headers = [(b"content-type", b"application/json"), (b"x-conversation-id", b"c1")]
    return await client.request("POST", b"/tokenize?x=1", headers, body)


async def test_every_request_carries_the_workers_key_and_a_keyless_client_none(
    upstream: Upstream,
) -> None:
    # docs/protocol.md §8: a worker answers only its router; a peer's client has no worker key.
    keyed = WorkerClient("127.0.0.1", upstream.port, timeout=5, key="k-123")
    await (await _post(keyed)).read()
    assert await keyed.exchange("GET", b"/health", None) == (200, b"ok")
    await keyed.aclose()
    peer = WorkerClient("127.0.0.1", upstream.port, timeout=5, party="peer 'b'")
    await (await _post(peer)).read()
    await peer.aclose()
    heads = [request.split(b"\r\n\r\n")[0].split(b"\r\n") for _, request in upstream.requests]
    assert [b"x-corral-worker-key: k-123" in head for head in heads] == [True, True, False]
    assert not any(line.startswith(b"x-corral-worker-key") for line in heads[2])


async def test_requests_go_out_as_given_and_share_one_connection(upstream: Upstream) -> None:
    client = WorkerClient("127.0.0.1", upstream.port, timeout=5)
    for _ in range(2):
        answer = await _post(client, b'{"content": "hi"}')
        assert (answer.status, await answer.read()) == (200, b"ok")
        assert answer.header(b"content-type") == b"application/json"
        answer.close()
    assert upstream.connections == 1
    number, sent = upstream.requests[1]
    assert number == 1
    assert sent.startswith(b"POST /tokenize?x=1 HTTP/1.1\r\n")
    assert f"host: 127.0.0.1:{upstream.port}\r\n".encode() in sent
    assert b"x-conversation-id: c1\r\ncontent-length: 17\r\n\r\n" in sent
    assert sent.endswith(b'\r\n\r\n{"content": "hi"}')
    await client.aclose()
    with anyio.fail_after(5):
        await upstream.client_left.wait()  # idle connections are closed with the client


async def test_a_chunked_answer_streams_before_it_ends(upstream: Upstream) -> None:
    more = asyncio.Event()

    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n")
        await more.wait()
        writer.write(b"6\r\nsecond\r\n0\r\n\r\n")

    upstream.answer = answer
    client = WorkerClient("127.0.0.1", upstream.port, timeout=5)
    response = await _post(client)
    chunks = response.chunks()
    assert await anext(chunks) == b"first"  # while the rest has not even been written
    assert not response.complete
    more.set()
    assert b"".join([chunk async for chunk in chunks]) == b"second"
    response.close()
    upstream.answer = _reply(b"again")
    again = await _post(client)
    assert await again.read() == b"again"
    assert upstream.connections == 1


async def test_a_short_answer_can_be_awaited_whole(upstream: Upstream) -> None:
    head_sent, release = asyncio.Event(), asyncio.Event()

    async def body_later(writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\n")
        head_sent.set()
        await release.wait()
        writer.write(b"body")

    upstream.answer = body_later
    client = WorkerClient("127.0.0.1", upstream.port, timeout=5)
    headers = [(b"content-type", b"application/json")]
    asking = asyncio.ensure_future(client.request("POST", b"/x", headers, b"{}", whole_below=5))
    await head_sent.wait()
    for _ in range(20):  # whatever the head's arrival, the request waits for the body
        await anyio.lowlevel.checkpoint()
    assert not asking.done()
    release.set()
    response = await asking
    assert response.complete
    assert await response.read() == b"body"


async def test_closing_an_unfinished_answer_closes_its_connection(upstream: Upstream) -> None:
    async def endless(writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\na\r\n")

    upstream.answer = endless
    client = WorkerClient("127.0.0.1", upstream.port, timeout=5)
    response = await _post(client)
    assert await anext(response.chunks()) == b"a"
    response.close()
    with anyio.fail_after(5):
        await upstream.client_left.wait()  # this is how a worker learns to stop generating
    upstream.answer = _reply(b"fresh")
    assert await (await _post(client)).read() == b"fresh"
    assert upstream.connections == 2


async def test_a_worker_going_away_mid_answer_is_an_upstream_error(upstream: Upstream) -> None:
    async def dies(writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\npart\r\n")
        writer.transport.abort()

    upstream.answer = dies
    client = WorkerClient("127.0.0.1", upstream.port, timeout=5)
    response = await _post(client)
    chunks = response.chunks()
    assert await anext(chunks) == b"part"
    with pytest.raises(UpstreamError, match="connection to the worker lost"):
        await anext(chunks)


async def test_a_silent_worker_times_out(upstream: Upstream) -> None:
    async def silent(writer: asyncio.StreamWriter) -> None:
        pass

    upstream.answer = silent
    client = WorkerClient("127.0.0.1", upstream.port, timeout=0.2)
    with pytest.raises(UpstreamError, match=r"no answer from the worker in 0\.2 s"):
        await _post(client)
    with anyio.fail_after(5):
        await upstream.client_left.wait()  # the abandoned request's connection is not kept


async def test_an_answer_that_is_not_http_is_an_upstream_error(upstream: Upstream) -> None:
    async def garbage(writer: asyncio.StreamWriter) -> None:
        writer.write(b"SMTP ready\r\n\r\n")

    upstream.answer = garbage
    client = WorkerClient("127.0.0.1", upstream.port, timeout=5)
    with pytest.raises(UpstreamError, match="invalid HTTP from the worker"):
        await _post(client)


async def test_an_interim_answer_is_skipped(upstream: Upstream) -> None:
    async def continue_first(writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 100 Continue\r\nx-interim: 1\r\n\r\n")
        await _reply(b"final")(writer)

    upstream.answer = continue_first
    client = WorkerClient("127.0.0.1", upstream.port, timeout=5)
    for _ in range(2):  # and the connection is still in step for the next request
        response = await _post(client)
        assert (response.status, await response.read()) == (200, b"final")
        assert response.header(b"x-interim") is None
        response.close()
    assert upstream.connections == 1


async def test_connection_close_from_the_worker_is_honoured(upstream: Upstream) -> None:
    upstream.answer = _reply(b"bye", b"connection: close")
    client = WorkerClient("127.0.0.1", upstream.port, timeout=5)
    for _ in range(2):
        response = await _post(client)
        assert await response.read() == b"bye"
        response.close()
    assert upstream.connections == 2


async def test_a_large_answer_waiting_for_its_reader_pauses_the_worker(upstream: Upstream) -> None:
    body = bytes(range(256)) * (16 * 1024)  # 4 MiB, four times what may wait in the router
    upstream.answer = _reply(body)
    client = WorkerClient("127.0.0.1", upstream.port, timeout=5)
    response = await _post(client)
    # Flow control is internal; these two private peeks are the only ones in the tests.
    while response._buffered < PAUSE_ABOVE:  # loop turns, not time: the answer keeps arriving
        await anyio.lowlevel.checkpoint()
    transport = response._connection.transport
    assert transport is not None
    assert not transport.is_reading()  # the rest stays in the kernel, then at the worker
    assert await response.read() == body
    assert transport.is_reading()


async def test_no_worker_listening_is_an_upstream_error(upstream: Upstream) -> None:
    closed = await asyncio.start_server(upstream.handle, "127.0.0.1", 0)
    port = closed.sockets[0].getsockname()[1]
    closed.close()
    await closed.wait_closed()
    with pytest.raises(UpstreamError, match="cannot connect to the worker"):
        await _post(WorkerClient("127.0.0.1", port, timeout=5))


async def test_a_closed_client_refuses_new_requests(upstream: Upstream) -> None:
    client = WorkerClient("127.0.0.1", upstream.port, timeout=5)
    await client.aclose()
    with pytest.raises(UpstreamError, match="the worker is stopping"):
        await _post(client)
    assert upstream.connections == 0


async def test_abort_cuts_answers_in_progress_and_refuses_new_requests(upstream: Upstream) -> None:
    async def endless(writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\na\r\n")

    async def silent(writer: asyncio.StreamWriter) -> None:
        pass

    upstream.answer = endless
    client = WorkerClient("127.0.0.1", upstream.port, timeout=5)
    streaming = await _post(client)
    chunks = streaming.chunks()
    assert await anext(chunks) == b"a"
    upstream.answer = silent  # a second request the worker never answers
    waiting = asyncio.ensure_future(_post(client))
    with anyio.fail_after(5):
        while len(upstream.requests) < 2:  # both requests reached the worker
            await anyio.lowlevel.checkpoint()

    client.abort()  # a stalled worker: the router gives up on everything it was sent
    with pytest.raises(UpstreamError, match="connection to the worker lost"):
        await anext(chunks)
    with pytest.raises(UpstreamError, match="connection to the worker lost"):
        await waiting
    with pytest.raises(UpstreamError, match="the worker is stopping"):
        await _post(client)
