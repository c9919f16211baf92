"""One access line per request: method, path, model, status, duration and, when the answer
carries ``usage``/``timings``, the token counts and speed (issue 17: requests left no trace).

An ASGI wrapper outside the Litestar app, so that every answer is seen, refusals by the API-key
check and CORS included. It makes each request's :class:`~router.observe.requests.RequestRecord`
(the one the activity view shows, issue 39), whether access lines are written or not, and
closes it with the answer's status and tokens. The relay must not slow down: streamed chunks
are only tested for the bytes ``"timings"``/``"usage"`` (a C-speed search) and the one that has
them is kept by reference; the JSON is parsed once, at the end. Whole JSON answers are parsed
when small.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import msgspec
import structlog
from litestar.enums import ScopeType
from litestar.types import ASGIApp, HTTPScope, Message, Receive, Scope, Send

from router.observe.requests import (
    RequestHistory,
    RequestRecord,
    close_record,
    current_record,
    open_record,
)

__all__ = ["AccessLog", "note_model", "tokens_from_answer"]

_log = structlog.get_logger("corral.access")
_PARSED_BELOW = 1 << 20  # whole answers larger than this are not read for their usage
_MARKERS = (b'"timings"', b'"usage"', b'"eval_count"')  # OpenAI's, llama-server's, Ollama's
_QUIET_PREFIXES = ("/assets/",)  # the Web UI's static files: a dozen lines per page load
# What the Web UI, `corral top`, health checks and scrapers ask every few seconds: their
# answered GETs are debug (`-lv 4`), so that the info log is the requests people make.
_POLLS = frozenset({"/models", "/v1/models", "/health", "/v1/health", "/activity", "/metrics"})


def note_model(name: str) -> RequestRecord | None:
    """Name the model of the request being handled; its record (None outside an
    :class:`AccessLog`)."""
    record = current_record()
    if record is not None:
        record.model = name
    return record


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    number = _number(value)
    return int(number) if number is not None else None


def _first(mapping: dict[str, Any], names: tuple[str, ...]) -> int | None:
    return next((int(mapping[n]) for n in names if _number(mapping.get(n)) is not None), None)


def tokens_from_answer(answer: Any, record: RequestRecord) -> None:
    """Fill ``record``'s token counts and times from an answer's ``usage`` and ``timings``."""
    if not isinstance(answer, dict):
        return
    timings, usage = answer.get("timings"), answer.get("usage")
    if isinstance(usage, dict):
        # OpenAI's names, then Anthropic's.
        record.prompt_tokens = _first(usage, ("prompt_tokens", "input_tokens"))
        record.completion_tokens = _first(usage, ("completion_tokens", "output_tokens"))
        details = usage.get("prompt_tokens_details")
        if isinstance(details, dict):
            record.cached_tokens = _int(details.get("cached_tokens"))
        if record.cached_tokens is None:
            record.cached_tokens = _int(usage.get("cache_read_input_tokens"))
            # Anthropic's input_tokens leave out the prompt's cached part (docs/api.md).
            if record.prompt_tokens is not None and record.cached_tokens is not None:
                record.prompt_tokens += record.cached_tokens
    if isinstance(timings, dict):
        record.prompt_ms = _number(timings.get("prompt_ms"))
        record.predicted_ms = _number(timings.get("predicted_ms"))
        record.tokens_per_s = _number(timings.get("predicted_per_second"))
        if record.completion_tokens is None:
            record.completion_tokens = _int(timings.get("predicted_n"))
        if record.prompt_tokens is None:
            record.prompt_tokens = _int(timings.get("prompt_n"))
        if record.cached_tokens is None:
            record.cached_tokens = _int(timings.get("cache_n"))
        record.restored_tokens = _int(timings.get("restored_n"))
    if "eval_count" in answer or "prompt_eval_count" in answer:  # Ollama's API
        record.prompt_tokens = _int(answer.get("prompt_eval_count"))
        record.completion_tokens = _int(answer.get("eval_count"))
        prompt_ns, predicted_ns = (
            _number(answer.get("prompt_eval_duration")),
            _number(answer.get("eval_duration")),
        )
        record.prompt_ms = None if prompt_ns is None else prompt_ns / 1e6
        record.predicted_ms = None if predicted_ns is None else predicted_ns / 1e6
        if record.completion_tokens and record.predicted_ms:  # as predicted_per_second is
            record.tokens_per_s = record.completion_tokens / record.predicted_ms * 1000
    if not record.model and isinstance(answer.get("model"), str):
        record.model = answer["model"]


def _last_event(data: bytes) -> Any:
    """The last event (SSE's ``data:``) or line (Ollama's NDJSON) of a piece of a stream that
    has usage, timings or Ollama's counts."""
    for line in reversed(data.splitlines()):
        if any(marker in line for marker in _MARKERS):
            line = line[5:] if line.startswith(b"data:") else line
            try:
                return msgspec.json.decode(line.strip())
            except msgspec.DecodeError:
                return None
    return None


class _Watch:
    """The parts of one answer the access line needs, gathered as the answer goes out."""

    def __init__(self) -> None:
        self.status = 500  # an app that raises before answering: uvicorn sends a 500
        self.stream = False
        self._json = False
        self._whole: list[bytes] = []
        self._size = 0
        self._previous = b""
        self._with_usage: tuple[bytes, bytes] | None = None

    def start(self, message: dict[str, Any]) -> None:
        self.status = int(message["status"])
        headers = dict(message.get("headers") or [])
        content_type = headers.get(b"content-type", b"")
        self.stream = content_type.startswith((b"text/event-stream", b"application/x-ndjson"))
        self._json = content_type.startswith(b"application/json")

    def body(self, chunk: bytes) -> None:
        if self.stream:
            # An event may be split across two chunks: keep the one before as well.
            # Spelt out rather than any() over _MARKERS: no generator made per chunk.
            if b'"usage"' in chunk or b'"timings"' in chunk or b'"eval_count"' in chunk:
                self._with_usage = (self._previous, chunk)
            self._previous = chunk
        elif self._json and self._size < _PARSED_BELOW:
            self._whole.append(chunk)
            self._size += len(chunk)

    def tokens(self, record: RequestRecord) -> None:
        if self.stream:
            tokens_from_answer(_last_event(b"".join(self._with_usage or ())), record)
            return
        if not self._whole or self._size >= _PARSED_BELOW:
            return
        try:
            tokens_from_answer(msgspec.json.decode(b"".join(self._whole)), record)
        except msgspec.DecodeError:
            return


class AccessLog:
    """Wraps an ASGI app; closes each HTTP request's record when its answer is done, with
    ``log`` writes its access line at info (a poll's at debug), and hands each finished request
    for a model to ``finished`` (the traces, docs/operations.md "Traces")."""

    def __init__(
        self,
        app: ASGIApp,
        history: RequestHistory | None = None,
        *,
        log: bool = True,
        finished: Callable[[RequestRecord, Scope], None] | None = None,
    ) -> None:
        self._app = app
        self._history = history
        self._log_lines = log
        self._finished = finished

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self._app(scope, receive, send)
            return
        record, token = open_record(scope["path"], self._history, traced=self._finished is not None)
        watch = _Watch()
        started = time.perf_counter()

        async def watching_send(message: Message) -> None:
            event: dict[str, Any] = message  # type: ignore[assignment]  # a union of TypedDicts
            if event["type"] == "http.response.start":
                watch.start(event)
                record.stream = watch.stream
            elif event["type"] == "http.response.body":
                watch.body(event.get("body", b""))
            await send(message)

        try:
            await self._app(scope, receive, watching_send)
        finally:
            close_record(token)
            record.ended, record.status = time.time(), watch.status
            record.state = "done" if watch.status < 400 else "failed"
            # Only an access line or a request for a model (the history, the traces) reads the
            # answer's counts: unlogged listings and the Web UI's polls are not parsed.
            if self._log_lines or record.model:
                watch.tokens(record)
            if self._history is not None:
                self._history.finish(record)
            if self._finished is not None and record.model:
                self._finished(record, scope)
            if self._log_lines:
                self._log(scope, record, (time.perf_counter() - started) * 1000)

    @staticmethod
    def _log(scope: HTTPScope, record: RequestRecord, duration_ms: float) -> None:
        path: str = scope["path"]
        status = record.status or 500
        if path.startswith(_QUIET_PREFIXES) and status < 400:
            return
        fields: dict[str, Any] = {}
        if record.model:
            fields["model"] = record.model
        if record.prompt_tokens is not None:
            fields["prompt_tokens"] = record.prompt_tokens
        if record.completion_tokens is not None:
            fields["generated_tokens"] = record.completion_tokens
        if record.tokens_per_s is not None:
            fields["tokens_per_s"] = round(record.tokens_per_s, 1)
        method = scope["method"]
        duration = round(duration_ms)
        summary = f"{method} {path} {status} {duration} ms"
        polled = method == "GET" and path in _POLLS and status < 400
        _log.log(
            logging.DEBUG if polled else logging.INFO,
            summary,
            method=method,
            path=path,
            status=status,
            duration_ms=duration,
            restated=("method", "path", "status", "duration_ms"),  # a terminal shows them once
            **fields,
        )
