"""One access line per request: method, path, model, status, duration and, when the answer
carries ``usage``/``timings``, the token counts and speed (issue 17: requests left no trace).

An ASGI wrapper outside the Litestar app, so that every answer is seen, refusals by the API-key
check and CORS included. The relay must not slow down: streamed chunks are only tested for the
bytes ``"timings"``/``"usage"`` (a C-speed search) and the one that has them is kept by
reference; the JSON is parsed once, at the end. Whole JSON answers are parsed when small.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import msgspec
import structlog
from litestar.enums import ScopeType
from litestar.types import ASGIApp, HTTPScope, Message, Receive, Scope, Send

__all__ = ["AccessLog", "RequestNote", "note_model", "tokens_from_answer"]

_log = structlog.get_logger("corral.access")
_PARSED_BELOW = 1 << 20  # whole answers larger than this are not read for their usage
_MARKERS = (b'"timings"', b'"usage"')
_QUIET_PREFIXES = ("/assets/",)  # the Web UI's static files: a dozen lines per page load


@dataclass(slots=True)
class RequestNote:
    """What the handlers know and the wrapper does not: the model a request was for."""

    model: str | None = None


_current: ContextVar[RequestNote | None] = ContextVar("corral_access_note", default=None)


def note_model(name: str) -> None:
    """Name the model of the request being handled (no-op outside an :class:`AccessLog`)."""
    note = _current.get()
    if note is not None:
        note.model = name


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def tokens_from_answer(answer: Any) -> dict[str, Any]:
    """Prompt and generated tokens and tokens/s from an answer's ``timings`` or ``usage``."""
    if not isinstance(answer, dict):
        return {}
    found: dict[str, Any] = {}
    timings, usage = answer.get("timings"), answer.get("usage")
    if isinstance(usage, dict):
        # OpenAI's names, then Anthropic's.
        for field, names in (
            ("prompt_tokens", ("prompt_tokens", "input_tokens")),
            ("generated_tokens", ("completion_tokens", "output_tokens")),
        ):
            value = next((usage[n] for n in names if _number(usage.get(n)) is not None), None)
            if value is not None:
                found[field] = int(value)
    if isinstance(timings, dict):
        if (speed := _number(timings.get("predicted_per_second"))) is not None:
            found["tokens_per_s"] = round(speed, 1)
        if "generated_tokens" not in found and _number(timings.get("predicted_n")) is not None:
            found["generated_tokens"] = int(timings["predicted_n"])
        if "prompt_tokens" not in found and _number(timings.get("prompt_n")) is not None:
            found["prompt_tokens"] = int(timings["prompt_n"])
    if isinstance(answer.get("model"), str):
        found["model"] = answer["model"]
    return found


def _last_event(data: bytes) -> Any:
    """The last ``data:`` event of a piece of a stream that has usage or timings."""
    for line in reversed(data.splitlines()):
        if line.startswith(b"data:") and any(marker in line for marker in _MARKERS):
            try:
                return msgspec.json.decode(line[5:].strip())
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
        self.stream = content_type.startswith(b"text/event-stream")
        self._json = content_type.startswith(b"application/json")

    def body(self, chunk: bytes) -> None:
        if self.stream:
            # An event may be split across two chunks: keep the one before as well.
            if any(marker in chunk for marker in _MARKERS):
                self._with_usage = (self._previous, chunk)
            self._previous = chunk
        elif self._json and self._size < _PARSED_BELOW:
            self._whole.append(chunk)
            self._size += len(chunk)

    def tokens(self) -> dict[str, Any]:
        if self.stream:
            return tokens_from_answer(_last_event(b"".join(self._with_usage or ())))
        if not self._whole or self._size >= _PARSED_BELOW:
            return {}
        try:
            return tokens_from_answer(msgspec.json.decode(b"".join(self._whole)))
        except msgspec.DecodeError:
            return {}


class AccessLog:
    """Wraps an ASGI app; logs one line at info when each HTTP request's answer is done."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self._app(scope, receive, send)
            return
        note = RequestNote()
        token = _current.set(note)
        watch = _Watch()
        started = time.perf_counter()

        async def watching_send(message: Message) -> None:
            event: dict[str, Any] = message  # type: ignore[assignment]  # a union of TypedDicts
            if event["type"] == "http.response.start":
                watch.start(event)
            elif event["type"] == "http.response.body":
                watch.body(event.get("body", b""))
            await send(message)

        try:
            await self._app(scope, receive, watching_send)
        finally:
            _current.reset(token)
            self._log(scope, note, watch, (time.perf_counter() - started) * 1000)

    @staticmethod
    def _log(scope: HTTPScope, note: RequestNote, watch: _Watch, duration_ms: float) -> None:
        path: str = scope["path"]
        if path.startswith(_QUIET_PREFIXES) and watch.status < 400:
            return
        fields = watch.tokens()
        model = note.model or fields.pop("model", None)
        fields.pop("model", None)
        method = scope["method"]
        duration = round(duration_ms)
        summary = f"{method} {path} {watch.status} {duration} ms"
        _log.info(
            summary,
            method=method,
            path=path,
            status=watch.status,
            duration_ms=duration,
            restated=("method", "path", "status", "duration_ms"),  # a terminal shows them once
            **({"model": model} if model else {}),
            **fields,
        )
