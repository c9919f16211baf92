"""Response bodies in OpenAI's and llama-server's shapes, built from generation events."""

from __future__ import annotations

import time
import uuid
from typing import Any

import msgspec

from worker.batching import Finished
from worker.tools import ToolPlan

__all__ = ["ChatShape", "NativeShape", "ResponseShape", "TextShape", "ToolChatShape", "sse"]


def _usage(finished: Finished) -> dict[str, Any]:
    return {
        "prompt_tokens": finished.prompt_tokens,
        "completion_tokens": finished.predicted_tokens,
        "total_tokens": finished.prompt_tokens + finished.predicted_tokens,
        "prompt_tokens_details": {"cached_tokens": finished.cached_tokens},
    }


def sse(payload: Any, event: str | None = None) -> bytes:
    """One server-sent event; ``event`` names it (Anthropic's and Responses' streams do)."""
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + msgspec.json.encode(payload) + b"\n\n"


def _accounting(finished: Finished) -> dict[str, Any]:
    """What every final answer carries: OpenAI's usage and llama-server's timings."""
    return {"usage": _usage(finished), "timings": finished.timings}


class ResponseShape:
    """How one route words its answer.

    Subclasses fill in :meth:`chunk`, :meth:`closing` and :meth:`whole` as JSON values; a route
    whose stream is not one ``data:`` event per value overrides the ``stream_*`` methods.
    """

    done_marker = True  # OpenAI streams end with `data: [DONE]`; llama-server's own do not
    # Set by run_chat before generation starts: Anthropic's stream announces it in its first event,
    # long before the Finished event that carries the counts.
    prompt_tokens = 0

    def __init__(self, model: str, prefix: str) -> None:
        self.model = model
        self.id = f"{prefix}-{uuid.uuid4().hex}"
        self.created = int(time.time())

    def opening(self) -> dict[str, Any] | None:
        return None

    def chunk(self, text: str) -> dict[str, Any] | None:
        """The event for a piece of text, or None to hold it until the end."""
        raise NotImplementedError

    def closing(self, finished: Finished) -> dict[str, Any]:
        raise NotImplementedError

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        raise NotImplementedError

    def stream_opening(self) -> bytes:
        opening = self.opening()
        return sse(opening) if opening is not None else b""

    def stream_chunk(self, text: str) -> bytes:
        chunk = self.chunk(text)
        return sse(chunk) if chunk is not None else b""

    def stream_closing(self, finished: Finished) -> bytes:
        return sse(self.closing(finished)) + (b"data: [DONE]\n\n" if self.done_marker else b"")


class ChatShape(ResponseShape):
    def __init__(self, model: str) -> None:
        super().__init__(model, "chatcmpl")

    def _chunk(self, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    def opening(self) -> dict[str, Any]:
        return self._chunk({"role": "assistant", "content": None}, None)

    def chunk(self, text: str) -> dict[str, Any] | None:
        return self._chunk({"content": text}, None)

    def closing(self, finished: Finished) -> dict[str, Any]:
        return {
            **self._chunk({}, finished.reason),
            **_accounting(finished),
        }

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "logprobs": None,
                    "finish_reason": finished.reason,
                }
            ],
            **_accounting(finished),
        }


class ToolChatShape(ChatShape):
    """A chat with tools: the constrained JSON answer is held, then sent as ``tool_calls``."""

    def __init__(self, model: str, plan: ToolPlan) -> None:
        super().__init__(model)
        self._plan = plan
        self._held: list[str] = []

    def chunk(self, text: str) -> dict[str, Any] | None:
        self._held.append(text)
        return None

    def closing(self, finished: Finished) -> dict[str, Any]:
        answer = self._plan.parse("".join(self._held))
        delta: dict[str, Any] = {"content": answer.content}
        if answer.tool_calls:
            delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(answer.tool_calls)]
        reason = answer.finish_reason if finished.reason == "stop" else finished.reason
        return {
            **self._chunk(delta, reason),
            **_accounting(finished),
        }

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        answer = self._plan.parse(text)
        body = super().whole(answer.content or "", finished)
        choice = body["choices"][0]
        if answer.tool_calls:
            choice["message"] = {
                "role": "assistant",
                "content": None,
                "tool_calls": answer.tool_calls,
            }
            choice["finish_reason"] = (
                answer.finish_reason if finished.reason == "stop" else (finished.reason)
            )
        return body


class TextShape(ResponseShape):
    """OpenAI ``/v1/completions``."""

    def __init__(self, model: str) -> None:
        super().__init__(model, "cmpl")

    def _body(self, text: str, finish: str | None) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "text_completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish}],
        }

    def chunk(self, text: str) -> dict[str, Any] | None:
        return self._body(text, None)

    def closing(self, finished: Finished) -> dict[str, Any]:
        return {
            **self._body("", finished.reason),
            **_accounting(finished),
        }

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        return {
            **self._body(text, finished.reason),
            **_accounting(finished),
        }


class NativeShape(ResponseShape):
    """llama-server's own ``/completion``."""

    done_marker = False

    def __init__(self, model: str) -> None:
        super().__init__(model, "cmpl")

    def chunk(self, text: str) -> dict[str, Any] | None:
        return {"content": text, "stop": False, "id_slot": 0, "index": 0}

    def closing(self, finished: Finished) -> dict[str, Any]:
        return self.whole("", finished)

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        if finished.stop_word is not None:
            stop_type = "word"
        else:
            stop_type = "limit" if finished.reason == "length" else "eos"
        return {
            "content": text,
            "stop": True,
            "id_slot": 0,
            "index": 0,
            "model": self.model,
            "stop_type": stop_type,
            "stopping_word": finished.stop_word or "",
            "tokens_predicted": finished.predicted_tokens,
            "tokens_evaluated": finished.prompt_tokens,
            "tokens_cached": finished.cached_tokens,
            "timings": finished.timings,
        }
