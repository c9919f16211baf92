"""A worker's answer in Ollama's shape: NDJSON lines, or one object with ``stream: false``.

The worker answers Ollama's chat and generate requests as OpenAI's chat (or completions) API,
or as llama-server's ``/infill``; :class:`OllamaAnswer` turns either, whole or streamed, into
Ollama's objects: ``message`` (chat) or ``response`` (generate), ``thinking`` from the worker's
reasoning split, ``tool_calls`` whole (Ollama never streams a call's pieces), and a last
object with ``done_reason`` and the counters in nanoseconds.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import msgspec

from corral.http.errors import ApiError
from router.observe.access_log import tokens_from_answer
from router.observe.requests import current_record

__all__ = ["OllamaAnswer", "created_at", "error_body", "ollama_error_message", "worker_error"]

_encode = msgspec.json.Encoder().encode
_FINISH = {"length": "length"}  # everything else (stop, tool_calls, a stop word) is "stop"
_NATIVE_STOP = {"limit": "length"}


def created_at() -> str:
    """Now, as Ollama writes times (RFC 3339, UTC)."""
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def error_body(message: str) -> bytes:
    return _encode({"error": message})


def worker_error(status: int, body: bytes) -> tuple[int, bytes]:
    """A worker's refusal in Ollama's shape. Its 501 says the model lacks what was asked (fill in
    the middle, embeddings): a 400 to Ollama's clients, as Ollama answers "does not support"."""
    return 400 if status == 501 else status, error_body(ollama_error_message(body))


def ollama_error_message(body: bytes) -> str:
    """The message of an error body in Corral's shape (``{"error": {"message": …}}``)."""
    try:
        value = json.loads(body)
    except ValueError:
        return body.decode(errors="replace") or "error"
    error = value.get("error") if isinstance(value, dict) else None
    if isinstance(error, dict):
        return str(error.get("message", "error"))
    return str(error or "error")


class _Parts:
    """What one chunk (or one whole answer) of the worker's says, in any of its shapes."""

    def __init__(self, value: dict[str, Any]) -> None:
        self.text = ""
        self.thinking = ""
        self.tool_calls: list[dict[str, Any]] = []
        self.finish: str | None = None
        choices = value.get("choices")
        if isinstance(choices, list):  # OpenAI's chat or completions
            choice = choices[0] if choices else {}
            message = choice.get("delta") or choice.get("message") or {}
            self.text = message.get("content") or choice.get("text") or ""
            self.thinking = message.get("reasoning_content") or ""
            self.tool_calls = message.get("tool_calls") or []
            reason = choice.get("finish_reason")
            self.finish = _FINISH.get(reason, "stop") if reason else None
        else:  # llama-server's native answer (/infill)
            self.text = value.get("content") or ""
            if value.get("stop"):
                self.finish = _NATIVE_STOP.get(str(value.get("stop_type")), "stop")


class OllamaAnswer:
    """One chat or generate request's answer (implements router.relay.translation's protocol).

    ``load_seconds`` says, once the answer comes, how long the model's load took this request
    (0 when it was running already); durations are measured from ``started`` (perf_counter).
    """

    def __init__(
        self,
        model: str,
        *,
        chat: bool,
        streamed: bool,
        started: float,
        load_seconds: Callable[[], float],
    ) -> None:
        self._model = model
        self._chat = chat
        self._streamed = streamed
        self._started = started
        self._load_seconds = load_seconds
        self._calls: dict[int, dict[str, str]] = {}  # streamed tool calls, by index
        self._finish: str | None = None
        self._counters: dict[str, int] = {}

    @property
    def media_type(self) -> str:
        return "application/x-ndjson" if self._streamed else "application/json"

    def whole(self, status: int, body: bytes) -> tuple[int, bytes]:
        if status >= 400:
            return worker_error(status, body)
        try:
            value = json.loads(body)
        except ValueError:
            return 500, error_body("the model's answer is not JSON")
        parts = _Parts(value)
        self._count(value)
        calls = [_ollama_call(call.get("function") or {}) for call in parts.tool_calls]
        final = self._object(parts.text, parts.thinking, calls)
        final.update(self._final(parts.finish or "stop"))
        return 200, _encode(final)

    async def stream(self, events: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        buffer = b""
        async for chunk in events:
            buffer += chunk
            *complete, buffer = buffer.split(b"\n\n")
            lines = b"".join(self._event(event) for event in complete)
            if lines:
                yield lines
            if self._finish == "error":
                return
        yield (self._event(buffer) if buffer.strip() else b"") + self._closing()

    def error(self, error: ApiError) -> bytes:
        self._finish = "error"
        return error_body(error.message) + (b"\n" if self._streamed else b"")

    def _event(self, event: bytes) -> bytes:
        data = b"".join(
            line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:")
        )
        if not data or data == b"[DONE]" or self._finish == "error":
            return b""
        try:
            value = json.loads(data)
        except ValueError:
            return b""
        if not isinstance(value, dict):
            return b""
        if "error" in value:
            error = value["error"]
            self._finish = "error"
            message = error.get("message") if isinstance(error, dict) else error
            return error_body(str(message)) + b"\n"
        self._count(value)
        parts = _Parts(value)
        for call in parts.tool_calls:
            self._add_call(call)
        if parts.finish is not None:
            self._finish = parts.finish
        if not parts.text and not parts.thinking:
            return b""
        return _encode(self._object(parts.text, parts.thinking, [])) + b"\n"

    def _closing(self) -> bytes:
        if self._finish == "error":
            return b""
        lines = b""
        if self._calls:  # Ollama sends a call whole, in an object of its own, before the last
            calls = [_ollama_call(call) for _, call in sorted(self._calls.items())]
            lines = _encode(self._object("", "", calls)) + b"\n"
        final = self._object("", "", [])
        final.update(self._final(self._finish or "stop"))
        return lines + _encode(final) + b"\n"

    def _add_call(self, delta: dict[str, Any]) -> None:
        call = self._calls.setdefault(int(delta.get("index", 0)), {"name": "", "arguments": ""})
        function = delta.get("function") or {}
        call["name"] += function.get("name") or ""
        call["arguments"] += function.get("arguments") or ""

    def _object(self, text: str, thinking: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
        value: dict[str, Any] = {"model": self._model, "created_at": created_at()}
        if self._chat:
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if thinking:
                message["thinking"] = thinking
            if calls:
                message["tool_calls"] = calls
            value["message"] = message
        else:
            value["response"] = text
            if thinking:
                value["thinking"] = thinking
        value["done"] = False
        return value

    def _count(self, value: dict[str, Any]) -> None:
        """The counters of the answer's last chunk (usage and timings), in Ollama's units. The
        request's record takes the worker's own counts too: Ollama's answer has no place for
        the cached tokens the activity view shows for every route (docs/operations.md)."""
        usage = value.get("usage") or {}
        timings = value.get("timings") or {}
        if (usage or timings) and (record := current_record()) is not None:
            tokens_from_answer(value, record)
        prompt = usage.get("prompt_tokens", value.get("tokens_evaluated", timings.get("prompt_n")))
        generated = usage.get(
            "completion_tokens", value.get("tokens_predicted", timings.get("predicted_n"))
        )
        if prompt is not None:
            self._counters["prompt_eval_count"] = int(prompt)
        if generated is not None:
            self._counters["eval_count"] = int(generated)
        if "prompt_ms" in timings:
            self._counters["prompt_eval_duration"] = int(timings["prompt_ms"] * 1e6)
        if "predicted_ms" in timings:
            self._counters["eval_duration"] = int(timings["predicted_ms"] * 1e6)

    def _final(self, reason: str) -> dict[str, Any]:
        return {
            "done": True,
            "done_reason": reason,
            "total_duration": int((time.perf_counter() - self._started) * 1e9),
            "load_duration": int(self._load_seconds() * 1e9),
            **self._counters,
        }


def _ollama_call(function: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's call (arguments as a JSON string) as Ollama's (arguments as an object)."""
    arguments = function.get("arguments") or {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            arguments = {}
    if not isinstance(arguments, dict):
        arguments = {}
    return {"function": {"name": function.get("name") or "", "arguments": arguments}}
