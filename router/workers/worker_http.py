"""HTTP/1.1 from the router to its workers: a small keep-alive client made for relaying.

Every proxied request crosses this hop, so it is kept lean: an asyncio protocol over a pooled
connection, httptools (uvicorn's parser) for the answer, headers kept as bytes end to end. It
replaced httpx here, whose URL and header models cost the router about 0.5 ms per request
(bench/proxy_overhead.py, docs/benchmarks.md). A worker is our own uvicorn on loopback, so the
client needs no TLS, redirects, cookies, proxies or content decoding.

An answer's body is what the worker sent, de-chunked; closing an answer before its end closes
the connection, which is how a worker learns that nobody is listening and stops generating.
Every request to a worker carries the key the router gave it (docs/protocol.md §8).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Iterable
from typing import cast

import httptools

from corral.children.worker_key import WORKER_KEY_HEADER

__all__ = [
    "MAX_HEAD_BYTES",
    "PAUSE_ABOVE",
    "UpstreamError",
    "UpstreamResponse",
    "UpstreamUnreachable",
    "WorkerClient",
]

Headers = list[tuple[bytes, bytes]]

# The router forgets an idle connection well before a worker would close it (its uvicorn keeps
# them for WORKER_KEEP_ALIVE_SECONDS), so a request never races a worker-side close.
IDLE_EXPIRY_SECONDS = 30.0
_MAX_IDLE = 64
# Reading pauses while this much of an answer waits for a slow client (a worker then blocks).
PAUSE_ABOVE = 1 << 20
# A response head (status line and headers) larger than this is refused: a worker's are a few
# hundred bytes, and a peer (any server on the network) must not grow the router's memory.
MAX_HEAD_BYTES = 64 << 10


class UpstreamError(Exception):
    """The worker could not be reached, went away, timed out or spoke something other than HTTP."""


class UpstreamUnreachable(UpstreamError):
    """No connection could be made: the request was never sent, so it may be sent again."""


class _Connection(asyncio.Protocol):
    def __init__(self, party: str) -> None:
        self.party = party  # "the worker", "peer 'b'": who the messages blame
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.answer: UpstreamResponse | None = None
        self.closed = False
        self.paused = False
        self.interim = False
        self.idle_since = 0.0
        # Bytes received since the answer's head began; None once the head is in. httptools
        # buffers a header line of any length before calling on_header, so the bound is kept
        # on the bytes fed to it.
        self.head_bytes: int | None = 0

    # asyncio callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only alike.
        self.transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:  # an answer's last bytes must not wait for a delayed ACK
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(UpstreamError(f"invalid HTTP from {self.party}: {exc}"))
            return
        if self.head_bytes is not None:  # still in a head: after this chunk, is it too long?
            self.head_bytes += len(data)
            if self.head_bytes > MAX_HEAD_BYTES:
                limit = MAX_HEAD_BYTES >> 10
                self._fail(UpstreamError(f"{self.party} sent a head larger than {limit} KiB"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(UpstreamError(f"connection to {self.party} lost: {exc or 'closed'}"))

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        if self.answer is not None:
            self.answer.headers.append((name.lower(), value))

    def on_message_begin(self) -> None:
        self.head_bytes = 0

    def on_headers_complete(self) -> None:
        self.head_bytes = None
        status = self.parser.get_status_code()
        if status < 200:  # "100 Continue" and the like: the real answer follows
            self.interim = True
            if self.answer is not None:
                self.answer.headers.clear()
        elif self.answer is not None:
            self.answer.status = status
            self.answer._wake()

    def on_body(self, body: bytes) -> None:
        if self.answer is not None:
            self.answer._add(body)

    def on_message_complete(self) -> None:
        if self.interim:
            self.interim = False
            return
        answer, self.answer = self.answer, None
        if answer is not None:
            answer.reusable = self.parser.should_keep_alive()
            answer.complete = True
            answer._wake()

    def pause(self, paused: bool) -> None:
        if paused != self.paused and self.transport is not None and not self.closed:
            self.paused = paused
            (self.transport.pause_reading if paused else self.transport.resume_reading)()

    def _fail(self, error: UpstreamError) -> None:
        answer, self.answer = self.answer, None
        if answer is not None:
            answer.error = error
            answer._wake()
        self.close()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class UpstreamResponse:
    """One answer from a worker: status and headers once they are in, then the body as it comes.

    Always ``close()`` it: a finished answer gives its connection back to the pool, an unfinished
    one closes it.
    """

    def __init__(self, client: WorkerClient, connection: _Connection, timeout: float) -> None:
        self.status = 0
        self.headers: Headers = []
        self.complete = False
        self.reusable = False
        self.error: UpstreamError | None = None
        self._client = client
        self._connection = connection
        self._timeout = timeout
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False

    def header(self, name: bytes) -> bytes | None:
        return next((value for key, value in self.headers if key == name), None)

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives; raises :class:`UpstreamError` if the worker goes away."""
        while True:
            while self._chunks:
                chunk = self._chunks.popleft()
                self._buffered -= len(chunk)
                if self._buffered < PAUSE_ABOVE:
                    self._connection.pause(False)
                yield chunk
            if self.complete:
                return
            await self._wait()

    async def read(self, limit: int | None = None) -> bytes:
        """The whole body; more than ``limit`` bytes raise :class:`UpstreamError` (then close
        the answer, which closes the connection)."""
        if limit is None:
            return b"".join([chunk async for chunk in self.chunks()])
        too_large = UpstreamError(f"{self._connection.party} answered more than {limit >> 10} KiB")
        length = self.header(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise too_large  # announced: not worth waiting for
        pieces: list[bytes] = []
        size = 0
        async for chunk in self.chunks():
            size += len(chunk)
            if size > limit:
                raise too_large
            pieces.append(chunk)
        return b"".join(pieces)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._connection.answer is self:
            self._connection.answer = None
        self._connection.pause(False)  # a whole answer may have arrived in the chunk that paused
        self._client._release(self._connection, reusable=self.complete and self.reusable)

    async def _receive(self, whole_below: int) -> None:
        """Until the status and headers are in, and the whole body if it is announced short."""
        while not self.status:
            await self._wait()
        length = self.header(b"content-length")
        if length is not None and length.isdigit() and int(length) < whole_below:
            while not self.complete:
                await self._wait()

    async def _wait(self) -> None:
        if self.error is not None:
            raise self.error
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = loop.call_later(self._timeout, self._time_out, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None
        if self.error is not None:
            raise self.error

    def _time_out(self, waiter: asyncio.Future[None]) -> None:
        if not waiter.done():
            waiter.set_exception(
                UpstreamError(f"no answer from {self._connection.party} in {self._timeout} s")
            )

    def _add(self, chunk: bytes) -> None:
        self._chunks.append(chunk)
        self._buffered += len(chunk)
        if self._buffered >= PAUSE_ABOVE:
            self._connection.pause(True)
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class WorkerClient:
    """Requests to one worker over pooled keep-alive connections.

    ``timeout`` bounds each silence: connecting, waiting for the answer, and between two chunks
    of it (a long prefill or a non-streaming generation is legitimately quiet that long).
    ``key``: the worker's own key (``corral/children/worker_key.py``), sent with every request.
    Peers (router.relay.peers) use the same client, without a key: ``tls`` for one behind an
    HTTPS reverse proxy, ``party`` to name it in errors.
    """

    def __init__(
        self,
        host: str,
        port: int,
        timeout: float,
        connect_timeout: float = 5.0,
        *,
        tls: ssl.SSLContext | None = None,
        party: str = "the worker",
        key: str = "",
    ) -> None:
        self._address = (host, port)
        self._host_header = f"{host}:{port}".encode()
        self._key_line = WORKER_KEY_HEADER + b": " + key.encode() + b"\r\n" if key else b""
        self._tls = tls
        self._party = party
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._idle: list[_Connection] = []
        self._busy: set[_Connection] = set()  # carrying an answer: what abort() must cut
        self._closed = False

    async def request(
        self,
        method: str,
        target: bytes,
        headers: Iterable[tuple[bytes, bytes]],
        body: bytes | None,
        *,
        whole_below: int = 0,
    ) -> UpstreamResponse:
        """Send a request; returns once the status and headers are in.

        An answer whose announced length is under ``whole_below`` is awaited whole: a worker
        writes such a body right after its headers, and a whole answer is cheaper to relay.
        """
        connection = await self._connection()
        answer = connection.answer = UpstreamResponse(self, connection, self._timeout)
        head = [
            method.encode(), b" ", target, b" HTTP/1.1\r\nhost: ", self._host_header, b"\r\n",
            self._key_line,
        ]  # fmt: skip
        for name, value in headers:
            head += [name, b": ", value, b"\r\n"]
        if body is not None:
            head += [b"content-length: ", str(len(body)).encode(), b"\r\n"]
        head.append(b"\r\n")
        if body:
            head.append(body)
        assert connection.transport is not None
        connection.transport.write(b"".join(head))
        try:
            await answer._receive(whole_below)
        except BaseException:
            answer.close()
            raise
        return answer

    async def exchange(self, method: str, target: bytes, body: bytes | None) -> tuple[int, bytes]:
        """A whole request and answer, for the router's own small calls to a worker."""
        headers = [(b"content-type", b"application/json")] if body is not None else []
        answer = await self.request(method, target, headers, body)
        try:
            return answer.status, await answer.read()
        finally:
            answer.close()

    async def aclose(self) -> None:
        self._closed = True
        while self._idle:
            self._idle.pop().close()

    def abort(self) -> None:
        """Close every connection now, answers in progress too: their readers get
        :class:`UpstreamError`. For a worker the router gives up on (a stall)."""
        self._closed = True
        for connection in [*self._busy, *self._idle]:
            connection.close()
        self._busy.clear()
        self._idle.clear()

    async def _connection(self) -> _Connection:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed and now - connection.idle_since < IDLE_EXPIRY_SECONDS:
                self._busy.add(connection)
                return connection
            connection.close()
        if self._closed:
            raise UpstreamError(f"{self._party} is stopping")
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._connect_timeout):
                _, connection = await loop.create_connection(
                    lambda: _Connection(self._party), *self._address, ssl=self._tls
                )
        except (OSError, TimeoutError) as exc:
            raise UpstreamUnreachable(
                f"cannot connect to {self._party}: {exc or 'timed out'}"
            ) from None
        self._busy.add(connection)
        return connection

    def _release(self, connection: _Connection, reusable: bool) -> None:
        self._busy.discard(connection)
        if reusable and not connection.closed and not self._closed and len(self._idle) < _MAX_IDLE:
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
        else:
            connection.close()
