"""Chat completions in OpenAI's shape: one ``chat.completion``, or its stream of chunks.

Thinking is ``reasoning_content`` and tool calls are ``tool_calls``, streamed as OpenAI streams
them: a call's first delta carries its index, id and name, later ones pieces of its arguments.
"""

from __future__ import annotations

from typing import Any

from worker.answer.answer_context import AnswerContext
from worker.answer.response_shape import (
    ResponseShape,
    openai_accounting,
    sse,
    with_progress,
    with_timings,
)
from worker.chat.formats import MessageDelta, OutputParser, OutputStream, ParsedMessage
from worker.engine.generation import Delta, Finished, Progress
from worker.sampling.token_probs import TokenProb, TokenProbs, log_prob

__all__ = ["ChatShape", "logprobs_json"]


def _finish(finished: Finished, message: ParsedMessage) -> str:
    """``tool_calls`` when the model stopped after calling tools, else the generation's reason."""
    return "tool_calls" if message.tool_calls and finished.reason == "stop" else finished.reason


def _delta(delta: MessageDelta) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if delta.reasoning:
        body["reasoning_content"] = delta.reasoning
    if delta.content:
        body["content"] = delta.content
    if delta.tool_calls:
        body["tool_calls"] = [
            {"index": index, "id": call.id, "type": "function",
             "function": {"name": call.name, "arguments": call.arguments}}
            if call.name
            else {"index": index, "function": {"arguments": call.arguments}}
            for index, call in delta.tool_calls
        ]  # fmt: skip
    return body


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
    id_prefix = "chatcmpl-"

    def __init__(self, context: AnswerContext, parser: OutputParser) -> None:
        super().__init__(context)
        self._parser = parser
        self._stream = OutputStream(self._parser)
        self._logprobs: list[dict[str, Any]] = []

    def observe(self, delta: Delta) -> None:
        super().observe(delta)
        if delta.probs is not None:
            self._logprobs.append(logprobs_json(delta.probs))

    def _chunk(self, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        last = self.last
        logprobs = None
        if "content" in delta and last is not None and last.probs is not None:
            logprobs = {"content": [logprobs_json(last.probs)]}
        return {
            **self._envelope(),
            "choices": [
                {
                    "index": self.context.index,
                    "delta": delta,
                    "logprobs": logprobs,
                    "finish_reason": finish,
                }
            ],
        }

    def _envelope(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.context.created,
            "model": self.context.model,
            "system_fingerprint": self.fingerprint,
        }

    def opening(self) -> dict[str, Any]:
        return self._chunk({"role": "assistant", "content": None}, None)

    def progress(self, progress: Progress) -> dict[str, Any]:
        # As llama-server: each report is an opening chunk carrying the prompt's progress.
        return with_progress(self.opening(), progress)

    def chunk(self, text: str) -> dict[str, Any] | None:
        delta = self._stream.feed(text)
        if not delta:
            return None
        return with_timings(self._chunk(_delta(delta), None), self.last)

    def stream_closing(self, finished: Finished) -> bytes:
        rest = self._stream.finish()
        last = sse(self._chunk(_delta(rest), None)) if rest else b""
        # With include_usage the finish reason comes first; closing() is then the usage's chunk.
        if self.context.include_usage:
            last += sse(self._finish_chunk(finished))
        return last + super().stream_closing(finished)

    def _finish_chunk(self, finished: Finished) -> dict[str, Any]:
        return self._chunk({}, _finish(finished, self._stream.sent))

    def closing(self, finished: Finished) -> dict[str, Any]:
        if not self.context.include_usage:
            return {**self._finish_chunk(finished), **openai_accounting(finished)}
        # OpenAI's stream_options.include_usage: the usage in a last chunk with no choices,
        # which llama-server gives the timings too.
        return {**self._envelope(), "choices": [], **openai_accounting(finished)}

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        parsed = self._parser.whole(text)
        message: dict[str, Any] = {"role": "assistant", "content": parsed.content}
        if parsed.reasoning:
            message["reasoning_content"] = parsed.reasoning
        if parsed.tool_calls:
            message["content"] = parsed.content or None
            message["tool_calls"] = [call.openai() for call in parsed.tool_calls]
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.context.created,
            "model": self.context.model,
            "system_fingerprint": self.fingerprint,
            "choices": [
                {
                    "index": self.context.index,
                    "message": message,
                    "logprobs": {"content": self._logprobs} if self._logprobs else None,
                    "finish_reason": _finish(finished, parsed),
                }
            ],
            **openai_accounting(finished),
        }
