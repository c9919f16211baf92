"""Forwarding a request to the worker that owns its model, and relaying the answer as it comes.

Bodies go through byte for byte. Streams are relayed chunk by chunk with no buffering; a short
answer that announces its length goes out whole. A client that disconnects cancels the relay,
which closes the upstream connection, which makes the worker stop generating (docs/protocol.md §3).
A resumable session's generation goes on without its client (§5), and so does its relay: it
reads the rest of the answer for nobody, so the request, its key's ``concurrency`` slot and
its lease on the model last until the generation ends (docs/security.md, "Key holders").
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import structlog
from litestar import Request
from litestar.response.base import ASGIResponse
from litestar.types import HTTPResponseStartEvent, Receive, Scope, Send

from corral.children.protocol import REQUEST_ID_HEADER
from corral.http.disconnect import client_left, until_disconnected
from corral.http.errors import ApiError, sse_error_event
from router.observe.access_log import note_model
from router.observe.requests import begin_request, client_traceparent, traced_record
from router.observe.tracing.context import with_router_traceparent
from router.relay.conversations import Claim
from router.relay.headers import request_headers, request_target, response_headers
from router.relay.translation import AnswerTranslation
from router.scheduling.answers import scheduling_answered
from router.scheduling.leases import Lease
from router.scheduling.scheduler import Scheduler
from router.scheduling.waiting_line import Caller
from router.security.api_keys import is_uncounted
from router.security.callers import queue_caller
from router.workers.model_state import ModelState
from router.workers.worker_http import UpstreamError, UpstreamResponse

__all__ = [
    "WHOLE_BELOW",
    "RelayResponse",
    "WorkerStopping",
    "autoload_wanted",
    "forward",
    "relay",
]

_log = structlog.get_logger("corral.proxy")
# Answers announced shorter than this are relayed as one piece (JSON answers, not streams).
WHOLE_BELOW = 1 << 20
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
        progress: Callable[[], None],
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
        self._progress = progress  # every chunk tells the stall watchdog the worker works
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
            "headers": extra if translated else self._headers + extra,
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
            self._progress()
            self._first_piece()
            yield chunk
            break  # leaves the generator open: the loop below goes on with it
        async for chunk in chunks:
            self._progress()
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


def _fault_error(state: ModelState) -> ApiError | None:
    """What a request cut by the router's fault handling is told (a stall), if that is why."""
    if state.fault_message is None:
        return None
    return ApiError(503, f"model '{state.entry.name}' {state.fault_message}")


def autoload_wanted(request: Request[Any, Any, Any], default: bool) -> bool:
    """``?autoload=`` overrides ``--models-autoload``: "true"/"1" load, anything else does not."""
    value = request.query_params.get("autoload")
    return default if value is None else value.lower() in ("true", "1")


async def forward(
    request: Request[Any, Any, Any],
    scheduler: Scheduler,
    state: ModelState,
    body: bytes | None,
    *,
    autoload: bool,
    session: Claim | None = None,
    target: bytes | None = None,
    translation: AnswerTranslation | None = None,
) -> ASGIResponse:
    """Load the model if needed and allowed, then relay the request to its worker.

    ``target`` sends it to another path than the request's, and ``translation`` turns the
    answer into the client's API: for an API the router translates (router/api/ollama).

    ``session`` marks a resumable-session POST (docs/protocol.md §5): its client may leave
    while the model loads and it is forwarded all the same, so the generation lands in the
    session. Only a DELETE of the conversation meanwhile withdraws it, and the request fails;
    a worker that stops while it waits does not, as the next load answers it.
    """
    name = state.entry.name
    scope = request.scope
    who = queue_caller(scope)  # asked once: the record's key and class, and the queue's order
    begin_request(name, who.key, scope["path"], client_traceparent(scope), who.priority)
    if not autoload and not state.running:
        raise ApiError(400, "model is not loaded")
    tries = 2  # a second when the worker was stopping as the first reached it
    while True:
        lease = await _acquire(request, scheduler, name, who, detached=session is not None)
        if session is not None and not session.live():
            raise ApiError(
                400, "request cancelled by DELETE /v1/stream while the model was loading"
            )
        try:
            return await relay(
                request,
                scheduler,
                lease.state,
                body,
                session=session,
                target=target,
                translation=translation,
            )
        except WorkerStopping as stopping:
            tries -= 1
            if tries == 0 or not autoload:  # without autoload, nothing loads it again
                raise ApiError(503, str(stopping)) from None
            # Stopped (an unload, an eviction, a reload) between handing the model over and
            # the worker taking the request, which it never saw: asked again, the scheduler
            # waits for the stop and loads the model, as for a request a moment later.
            lease.release()  # that worker is going: its lease is no use to the retry
            if session is not None:
                session.detach()


async def _acquire(
    request: Request[Any, Any, Any], scheduler: Scheduler, name: str, who: Caller, *, detached: bool
) -> Lease:
    """A lease on the model, loading it if needed. The lease is the request's until it ends
    (router/scheduling/leases.py): whatever ends the request gives it back."""
    # A generation (a POST a key's concurrency counts) takes one of the model's slots, in the
    # scheduler's order for its class and key (docs/serving.md, "Scheduling"); GETs do not.
    scope = request.scope
    counted = request.method == "POST" and not is_uncounted(scope)
    caller = who if counted else None
    # Most requests find their model ready: no waiting, so no need to watch for a disconnect.
    with scheduling_answered():
        lease = scheduler.acquire_if_ready(name, scope, caller)
        if lease is None:
            waiting = scheduler.acquire(name, scope, caller)
            lease = await (waiting if detached else until_disconnected(request, waiting))
    if counted and scheduler.cores is not None:  # it computes until the request ends
        scheduler.cores.busy(lease.state, scope)
    return lease


class WorkerStopping(Exception):
    """The worker was being stopped and closed its connection before it took the request."""


async def relay(
    request: Request[Any, Any, Any],
    scheduler: Scheduler,
    state: ModelState,
    body: bytes | None,
    *,
    session: Claim | None = None,
    target: bytes | None = None,
    translation: AnswerTranslation | None = None,
) -> ASGIResponse:
    """Send the request to the worker of a model it holds a lease on (given back when the
    request ends, router/scheduling/leases.py).

    A ``session`` POST goes on even if its client leaves, and becomes the session of this
    worker: attached with no await between the check that the worker runs and the send, so
    the worker's exit (which ends its attached sessions) is either before both or after both.
    """
    name = state.entry.name
    record = note_model(name)  # the canonical name, whatever the request called it
    client = state.client
    if client is None:  # stopped between becoming ready and now
        raise ApiError(503, f"model '{name}' is not running")
    if session is not None:
        session.attach()
    if request.method == "POST":  # GETs (props, slots, metrics) do not make a model recent
        scheduler.touch(state)
    try:
        if scheduler.fake_timing:
            await anyio.sleep(scheduler.fake_timing)
        scope = request.scope
        headers = request_headers(scope, session, translated=translation is not None)
        if record is not None:  # a restore's notes name it (protocol §1)
            headers.append((REQUEST_ID_HEADER, record.id.encode()))
        if (traced := traced_record()) is not None:  # the worker gets the router's traceparent
            headers = with_router_traceparent(traced, headers)
        target = target or request_target(scope)
        sending = client.request(request.method, target, headers, body, whole_below=WHOLE_BELOW)
        if record is not None:  # the activity view's queue wait ends
            record.dispatched_now()
        upstream = await (sending if session is not None else until_disconnected(request, sending))
    except UpstreamError as exc:
        fault = _fault_error(state)
        if fault is not None:
            raise fault from None
        if state.stop_requested:
            raise WorkerStopping(f"model '{name}' was stopped before it took the request") from None
        raise ApiError(503, f"model '{name}' is unavailable: {exc}") from None
    scheduler.note_progress(state)  # the answer's head arrived: the worker works

    def cut_error(_: UpstreamError) -> ApiError:
        fault = _fault_error(state)
        return fault or ApiError(500, f"model '{name}' stopped while answering")

    return RelayResponse(
        upstream,
        name,
        progress=lambda: scheduler.note_progress(state),
        cut_error=cut_error,
        first_piece=record.chunk if record is not None else lambda: None,  # its first token
        translation=translation,
        detached=session is not None,
    )
