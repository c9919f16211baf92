"""What a traced request's spans are built from, captured while it runs (docs/operations.md,
Traces): its times, the model, the tokens and timings the worker reported, its status.

Installed only when tracing is on (:func:`router.observe.tracing.with_tracing`): off, no
:class:`RequestCapture` exists and the relay's two hooks find ``None`` in a context variable.
Nothing here imports the OpenTelemetry SDK; :mod:`router.observe.tracing.spans` turns a finished
capture into spans after the fact, from its timestamps, so no span is held while a request runs.

The fields are named as the per-request record's (``RequestRecord``, router/observe/requests.py:
one record shared with the access log and the activity view), so that one record can serve both.
Times are wall-clock seconds (``time.time()``), ``None`` when the phase did not happen.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import msgspec
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from corral.http.trace_context import TraceParent, parse_traceparent

__all__ = [
    "HttpFacts",
    "RequestCapture",
    "RequestCapturing",
    "TraceIds",
    "capturing",
    "trace_ids",
]

_current: ContextVar[RequestCapture | None] = ContextVar("corral_trace_capture", default=None)
# Span ids are derived from the request's id with this process's own secret, so that the id the
# worker is told (at dispatch) and the root span's (built at the end) agree without storing one,
# and a router restarted with ids counted from 1 again never repeats a trace.
_SALT = secrets.token_bytes(16)
_MARKERS = (b'"timings"', b'"usage"', b'"eval_count"')
_PARSED_BELOW = 1 << 20  # whole answers larger than this are not read for their usage


@dataclass(frozen=True, slots=True)
class TraceIds:
    trace_id: int
    span_id: int  # the router's root span: the worker's parent
    parent_span_id: int | None  # the client's span, when it sent a valid traceparent
    flags: int

    def traceparent(self) -> bytes:
        return TraceParent(self.trace_id, self.span_id, self.flags).header()


def trace_ids(request_id: str, trace_parent: str | None) -> TraceIds:
    """The ids of a request's trace: the client's trace continued, else a new one."""
    digest = hashlib.blake2b(request_id.encode(), key=_SALT, digest_size=24).digest()
    span_id = int.from_bytes(digest[:8]) or 1
    parent = parse_traceparent(trace_parent.encode("latin-1") if trace_parent else None)
    if parent is None:
        return TraceIds(int.from_bytes(digest[8:]) or 1, span_id, None, 1)
    return TraceIds(parent.trace_id, span_id, parent.span_id, parent.flags)


@dataclass(frozen=True, slots=True)
class HttpFacts:
    """What the HTTP semantic conventions want of a server span, read from the ASGI scope."""

    method: str
    scheme: str
    server_address: str | None
    server_port: int | None
    protocol_version: str

    @classmethod
    def of(cls, scope: Scope) -> HttpFacts:
        server = scope.get("server") or (None, None)
        host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
        name, _, port = host.rpartition(":")
        if not port.isdigit():  # no port given (or an IPv6 address's last group)
            name, port = host, ""
        name = name.removeprefix("[").removesuffix("]")
        return cls(
            method=str(scope.get("method", "GET")),
            scheme=scope.get("scheme", "http"),
            server_address=name or server[0],
            server_port=int(port) if port else server[1],
            protocol_version=scope.get("http_version", "1.1"),
        )


@dataclass(slots=True)
class RequestCapture:
    """One request's times, tokens and outcome (the per-request record's names)."""

    id: str
    route: str
    received: float
    trace_parent: str | None = None
    model: str | None = None
    stream: bool = False
    load_started: float | None = None
    load_ended: float | None = None
    dispatched: float | None = None
    first_token: float | None = None
    ended: float | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_ms: float | None = None
    predicted_ms: float | None = None
    restored_tokens: int | None = None
    status: int | None = None
    state: str = "queued"

    def waited_for_load(self, seconds: float) -> None:
        """The request's model loaded while it waited; the load took ``seconds``."""
        self.load_ended = time.time()
        self.load_started = self.load_ended - seconds

    def dispatch(self, model: str, headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        """The request goes to ``model``'s worker now: ``headers`` with the router's
        ``traceparent`` (its root span as the parent) in place of the client's."""
        self.model = model
        self.dispatched = time.time()
        self.state = "prompt"
        ids = trace_ids(self.id, self.trace_parent)
        kept = [(k, v) for k, v in headers if k != b"traceparent"]
        return [*kept, (b"traceparent", ids.traceparent())]

    def answered(self, answer: Any) -> None:
        """Tokens and timings from the answer's ``usage``/``timings`` (OpenAI's, Anthropic's and
        llama-server's names) or Ollama's counts."""
        if not isinstance(answer, dict):
            return
        usage = answer.get("usage")
        if isinstance(usage, dict):
            self.prompt_tokens = _first_int(usage, "prompt_tokens", "input_tokens")
            self.completion_tokens = _first_int(usage, "completion_tokens", "output_tokens")
            details = usage.get("prompt_tokens_details")
            cached = details.get("cached_tokens") if isinstance(details, dict) else None
            self.cached_tokens = (
                _int(cached) if cached is not None else _first_int(usage, "cache_read_input_tokens")
            )
        timings = answer.get("timings")
        if isinstance(timings, dict):
            self.prompt_ms = _float(timings.get("prompt_ms"))
            self.predicted_ms = _float(timings.get("predicted_ms"))
            self.prompt_tokens = self.prompt_tokens or _first_int(timings, "prompt_n")
            self.completion_tokens = self.completion_tokens or _first_int(timings, "predicted_n")
            self.cached_tokens = self.cached_tokens or _first_int(timings, "cache_n")
        if "eval_count" in answer or "prompt_eval_count" in answer:  # Ollama's API
            self.prompt_tokens = _first_int(answer, "prompt_eval_count")
            self.completion_tokens = _first_int(answer, "eval_count")
            prompt_ns = _float(answer.get("prompt_eval_duration"))
            predicted_ns = _float(answer.get("eval_duration"))
            self.prompt_ms = None if prompt_ns is None else prompt_ns / 1e6
            self.predicted_ms = None if predicted_ns is None else predicted_ns / 1e6


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _first_int(fields: dict[str, Any], *names: str) -> int | None:
    return next((found for n in names if (found := _int(fields.get(n))) is not None), None)


def capturing() -> RequestCapture | None:
    """The capture of the request being handled; ``None`` when tracing is off."""
    return _current.get()


def _last_answer(data: bytes) -> Any:
    """The last event or line of a stream's tail that has usage, timings or Ollama's counts."""
    for line in reversed(data.splitlines()):
        if any(marker in line for marker in _MARKERS):
            line = line[5:] if line.startswith(b"data:") else line
            try:
                return msgspec.json.decode(line.strip())
            except msgspec.DecodeError:
                return None
    return None


class RequestCapturing:
    """ASGI wrapper: a :class:`RequestCapture` for each HTTP request, handed to ``finished``
    when the answer is done. Streams (SSE, Ollama's NDJSON) keep only the chunks that mention
    usage (a C-speed search per chunk); the JSON is read once, at the end."""

    def __init__(self, app: ASGIApp, finished: Callable[[RequestCapture, HttpFacts], None]) -> None:
        self._app = app
        self._finished = finished

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self._app(scope, receive, send)
            return
        parent = dict(scope["headers"]).get(b"traceparent")
        capture = RequestCapture(
            id=os.urandom(8).hex(),
            route=scope["path"],
            received=time.time(),
            trace_parent=parent.decode("latin-1") if parent else None,
        )
        token = _current.set(capture)
        whole: list[bytes] = []
        tail: list[bytes] = []  # the chunk with the usage and the one before: an event may split
        previous = b""

        async def watching_send(message: Message) -> None:
            nonlocal previous
            if message["type"] == "http.response.start":
                capture.status = message["status"]
                kind = dict(message.get("headers") or []).get(b"content-type", b"")
                capture.stream = kind.startswith((b"text/event-stream", b"application/x-ndjson"))
            elif message["type"] == "http.response.body" and (chunk := message.get("body", b"")):
                if capture.stream:
                    if capture.first_token is None:
                        capture.first_token = time.time()
                        capture.state = "generating"
                    if any(marker in chunk for marker in _MARKERS):
                        tail[:] = [previous, chunk]
                    previous = chunk
                elif sum(map(len, whole)) < _PARSED_BELOW:
                    whole.append(chunk)
            await send(message)

        try:
            await self._app(scope, receive, watching_send)
        except BaseException:
            capture.status = capture.status or 500
            raise
        finally:
            _current.reset(token)
            capture.ended = time.time()
            capture.status = capture.status or 500
            capture.state = "done" if capture.status < 500 else "failed"
            if capture.model is not None:  # only requests that reached a model are traced
                capture.answered(_last_answer(b"".join(tail or whole)))
                self._finished(capture, HttpFacts.of(scope))
