"""Chat completions in OpenAI's shape: one ``chat.completion``, or its stream of chunks."""

from __future__ import annotations

from typing import Any

from worker.batching import Delta, Finished
from worker.response_shape import ResponseShape, openai_accounting
from worker.token_probs import TokenProb, TokenProbs, log_prob
from worker.tools import ToolPlan

__all__ = ["ChatShape", "ToolChatShape", "chat_shape"]


def _logprob(prob: TokenProb) -> dict[str, Any]:
    return {
        "token": prob.piece.decode("utf-8", "replace"),
        "logprob": log_prob(prob),
        "bytes": list(prob.piece),
    }


def logprobs_json(probs: TokenProbs) -> dict[str, Any]:
    """One entry of OpenAI's ``logprobs.content``."""
    return {**_logprob(probs.chosen), "top_logprobs": [_logprob(p) for p in probs.top]}


class ChatShape(ResponseShape):
    def __init__(self, model: str) -> None:
        super().__init__(model, "chatcmpl")
        self._logprobs: list[dict[str, Any]] = []
        self._last: Delta | None = None

    def observe(self, delta: Delta) -> None:
        self._last = delta
        if delta.probs is not None:
            self._logprobs.append(logprobs_json(delta.probs))

    def _chunk(self, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        last = self._last
        logprobs = None
        if "content" in delta and last is not None and last.probs is not None:
            logprobs = {"content": [logprobs_json(last.probs)]}
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": self.fingerprint,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
            ],
        }

    def opening(self) -> dict[str, Any]:
        return self._chunk({"role": "assistant", "content": None}, None)

    def chunk(self, text: str) -> dict[str, Any] | None:
        return self._chunk({"content": text}, None)

    def closing(self, finished: Finished) -> dict[str, Any]:
        return {
            **self._chunk({}, finished.reason),
            **openai_accounting(finished),
        }

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": self.fingerprint,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "logprobs": {"content": self._logprobs} if self._logprobs else None,
                    "finish_reason": finished.reason,
                }
            ],
            **openai_accounting(finished),
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
            **openai_accounting(finished),
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


def chat_shape(alias: str, plan: ToolPlan | None) -> ResponseShape:
    """The chat route's shape: tool calls when the request has tools, plain text otherwise."""
    return ChatShape(alias) if plan is None else ToolChatShape(alias, plan)
