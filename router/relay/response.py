"""A worker's (or a peer's) answer relayed to the client as it comes (docs/protocol.md §3).

Bodies go through byte for byte. Streams are relayed chunk by chunk with no buffering; a short
answer that announces its length goes out whole. A client that disconnects cancels the relay,
which closes the upstream connection, which makes the worker stop generating. A resumable
session's answer is read to its end for nobody once its client has gone (§5).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import anyio
import structlog
from litestar.response.base import ASGIResponse
from litestar.types import HTTPResponseStartEvent, Receive, Scope, Send

from corral.http.disconnect import client_left
from corral.http.errors import ApiError, sse_error_event
from router.relay.headers import guarded_head, response_headers
from router.relay.translation import AnswerTranslation
from router.workers.worker_http import UpstreamError, UpstreamResponse

__all__ = ["RelayResponse"]

_log = structlog.get_logger("corral.proxy")
# A whole answer translated into another API's shape is held in memory first: a peer (another
# party, docs/security.md) could otherwise send one without end. A worker's largest whole
# answers (long outputs with token probabilities) stay far below it.
_TRANSLATED_WHOLE_MAX = 64 << 20


class RelayResponse(ASGIResponse):
    """A worker's (or a peer's) answer passed on as it comes: its status, headers, body.

    Whatever ends the relay (the last byte, a client disconnect, the worker going away), the
    upstream answer is closed in ``finally``: an unfinished answer closes its connection, which
    tells the worker to stop generating (docs/protocol.md §3). The model's lease ends with the
    request, just after (router/scheduling/leases.py). A stream cut by the upstream ends with
    the SSE error event ``cut_error`` makes of the reason. ``translation`` turns the answer
    into another API's (router/relay/translation.py). ``first_piece`` is told once, when the
    answer's first piece arrives (the request record's first token).

    A ``detached`` answer (a resumable session's) is read to its end even once its client has
    gone: the generation goes on in the worker, and it is this request, until the worker's
    answer ends (the generation finished, a DELETE stopped it, the worker went), that counts it
    against its key's ``concurrency`` and holds the model's lease.

    Every head it sends, whatever answered and whether translated or not, is a guarded one
    (router/relay/headers.py: only the APIs' content types, ``nosniff``, a sandboxing CSP).
    """

    __slots__ = (
        "_client_gone",
        "_cut_error",
        "_detached",
        "_first_piece",
        "_headers",
        "_name",
        "_progress",
        "_translation",
        "_upstream",
    )

    def __init__(
        self,
        upstream: UpstreamResponse,
        name: str,
        *,
        progress: Callable[[bytes], None],
        cut_error: Callable[[UpstreamError], ApiError],
        first_piece: Callable[[], None] = lambda: None,
        translation: AnswerTranslation | None = None,
        detached: bool = False,
    ) -> None:
        super().__init__(status_code=upstream.status)
        self._upstream = upstream
        self._detached = detached
        self._client_gone = False
        self._headers = response_headers(upstream)
        self._name = name
        self._cut_error = cut_error
        # Every chunk is told as it comes: the stall watchdog hears that the worker works, the
        # request's record counts the tokens in it.
        self._progress = progress
        self._first_piece = first_piece
        self._translation = translation

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            if self._translation is not None:
                await self._translated(self._translation, receive, send)
                return
            if self._upstream.complete:  # most small answers: one body event, nothing to watch
                body = await self._upstream.read()
                # A short stream can be whole before it is relayed: its first piece is here too.
                self._first_piece()
                await self._start(send, [(b"content-length", str(len(body)).encode())])
                await send({"type": "http.response.body", "body": body, "more_body": False})
                return
            await self._start(send, [])
            async with anyio.create_task_group() as group:
                group.start_soon(self._watch_client, receive, group.cancel_scope)
                await self._copy(send)
                group.cancel_scope.cancel()
        finally:
            self._upstream.close()

    async def _watch_client(self, receive: Receive, relay: anyio.CancelScope) -> None:
        """A client that leaves ends the relay (Litestar's own streaming responses watch for a
        disconnect the same way), unless the answer is ``detached``: then only the sending
        stops, and the rest is read for nobody."""
        await client_left(receive)
        if self._detached:
            self._client_gone = True
        else:
            relay.cancel()

    async def _send_body(self, send: Send, body: bytes, *, more: bool = True) -> None:
        if not self._client_gone:
            await send({"type": "http.response.body", "body": body, "more_body": more})

    async def _start(
        self, send: Send, extra: list[tuple[bytes, bytes]], *, translated: bool = False
    ) -> None:
        start: HTTPResponseStartEvent = {
            "type": "http.response.start",
            "status": self.status_code,
            "headers": guarded_head(extra if translated else self._headers + extra),
        }
        await send(start)

    async def _translated(
        self, translation: AnswerTranslation, receive: Receive, send: Send
    ) -> None:
        media = [(b"content-type", translation.media_type.encode())]
        if not self._is_sse():
            try:
                self.status_code, body = translation.whole(
                    self.status_code, await self._upstream.read(_TRANSLATED_WHOLE_MAX)
                )
            except UpstreamError as exc:
                error = self._cut_error(exc)
                self.status_code, body = error.status, translation.error(error)
            if self.status_code >= 400:  # a refusal is a JSON error, whatever a stream would be
                media = [(b"content-type", b"application/json")]
            length = (b"content-length", str(len(body)).encode())
            await self._start(send, [*media, length], translated=True)
            await send({"type": "http.response.body", "body": body, "more_body": False})
            return
        await self._start(send, media, translated=True)
        async with anyio.create_task_group() as group:
            group.start_soon(self._watch_client, receive, group.cancel_scope)
            try:
                async for piece in translation.stream(self._chunks()):
                    await self._send_body(send, piece)
            except UpstreamError as exc:
                _log.warning("connection lost mid-response", model=self._name, error=str(exc))
                await self._send_body(send, translation.error(self._cut_error(exc)))
            await self._send_body(send, b"", more=False)
            group.cancel_scope.cancel()

    def _is_sse(self) -> bool:
        return (self._upstream.header(b"content-type") or b"").startswith(b"text/event-stream")

    async def _chunks(self) -> AsyncIterator[bytes]:
        chunks = self._upstream.chunks()
        async for chunk in chunks:  # the first piece: told once, then no test per chunk
            self._progress(chunk)
            self._first_piece()
            yield chunk
            break  # leaves the generator open: the loop below goes on with it
        async for chunk in chunks:
            self._progress(chunk)
            yield chunk

    async def _copy(self, send: Send) -> None:
        try:
            async for chunk in self._chunks():
                await self._send_body(send, chunk)
        except UpstreamError as exc:
            _log.warning("connection lost mid-response", model=self._name, error=str(exc))
            if self._is_sse():
                await self._send_body(send, sse_error_event(self._cut_error(exc)))
        await self._send_body(send, b"", more=False)
