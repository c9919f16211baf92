"""Answers in Anthropic's Messages shape: one message, or its stream of named events.

Usage counts as llama-server gives them (``server-task.cpp``) and Anthropic's clients add them
up: ``cache_read_input_tokens`` is the part of the prompt reused from the prompt cache and
``input_tokens`` the rest, so their sum is the whole prompt, ``/v1/messages/count_tokens``
(docs/api.md). The stream's ``message_start`` carries them, the cache's part known once the
generation has started; its ``message_delta`` repeats them with the output's count (Anthropic's
totals so far, which its SDKs take over).
"""

from __future__ import annotations

import json
from typing import Any

from worker.answer.answer_context import AnswerContext
from worker.answer.response_shape import ResponseShape, sse
from worker.chat.formats import MessageDelta, OutputParser, OutputStream, ToolCall
from worker.engine.generation import Finished

__all__ = ["MessagesShape"]


def _stop(finished: Finished, used_tool: bool) -> tuple[str, str | None]:
    """``stop_reason`` and ``stop_sequence``."""
    if finished.reason == "length":
        return "max_tokens", None
    if used_tool:
        return "tool_use", None
    if finished.stop_word is not None:
        return "stop_sequence", finished.stop_word
    return "end_turn", None


def _usage(prompt: int, cached: int, output: int) -> dict[str, int]:
    return {
        "input_tokens": prompt - cached,
        "output_tokens": output,
        "cache_read_input_tokens": cached,
    }


def _finished_usage(finished: Finished) -> dict[str, int]:
    return _usage(finished.prompt_tokens, finished.cached_tokens, finished.predicted_tokens)


class MessagesShape(ResponseShape):
    """``/v1/messages``: thinking, text and ``tool_use`` blocks, from one output reading."""

    id_prefix, id_digits = "msg_", 24

    def __init__(self, context: AnswerContext, parser: OutputParser) -> None:
        super().__init__(context)
        self._parser = parser
        self._stream = OutputStream(parser)
        self._open: str | None = None  # the kind of the streamed block now open
        self._index = -1  # the open block's index
        self._calls_seen = 0

    def _message(
        self,
        content: list[dict[str, Any]],
        stop: tuple[str | None, str | None],
        usage: dict[str, int],
    ) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.context.model,
            "content": content,
            "stop_reason": stop[0],
            "stop_sequence": stop[1],
            "usage": usage,
        }

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        parsed = self._parser.whole(text)
        blocks: list[dict[str, Any]] = []
        if parsed.reasoning:
            blocks.append({"type": "thinking", "thinking": parsed.reasoning, "signature": ""})
        if parsed.content:
            blocks.append({"type": "text", "text": parsed.content})
        blocks.extend(_tool_use(call) for call in parsed.tool_calls)
        stop = _stop(finished, bool(parsed.tool_calls))
        return self._message(blocks, stop, _finished_usage(finished))

    def stream_opening(self, cached: int) -> bytes:
        usage = _usage(self.context.prompt_tokens, cached, 0)
        message = self._message([], (None, None), usage)
        return sse({"type": "message_start", "message": message}, "message_start")

    def stream_chunk(self, text: str) -> bytes:
        return self._events(self._stream.feed(text))

    def _switch(self, kind: str, block: dict[str, Any]) -> bytes:
        """Close the open block unless it is already a ``kind`` one, and open ``block``."""
        if self._open == kind and kind != "tool_use":
            return b""
        closing = self._close()
        self._open, self._index = kind, self._index + 1
        return closing + _block_start(self._index, block)

    def _close(self) -> bytes:
        """The open block's end; a thinking block's is preceded by its (empty) signature, which
        Anthropic's clients expect before it closes (there is nothing here to sign it with)."""
        if self._open is None:
            return b""
        signature = b""
        if self._open == "thinking":
            signature = self._delta({"type": "signature_delta", "signature": ""})
        return signature + _block_stop(self._index)

    def _delta(self, delta: dict[str, Any]) -> bytes:
        event = {"type": "content_block_delta", "index": self._index, "delta": delta}
        return sse(event, "content_block_delta")

    def _events(self, delta: MessageDelta) -> bytes:
        parts: list[bytes] = []
        if delta.reasoning:
            block = {"type": "thinking", "thinking": "", "signature": ""}
            parts.append(self._switch("thinking", block))
            parts.append(self._delta({"type": "thinking_delta", "thinking": delta.reasoning}))
        if delta.content:
            parts.append(self._switch("text", {"type": "text", "text": ""}))
            parts.append(self._delta({"type": "text_delta", "text": delta.content}))
        for index, call in delta.tool_calls:
            if index >= self._calls_seen:
                self._calls_seen = index + 1
                use = {"type": "tool_use", "id": _tool_use_id(call), "name": call.name}
                parts.append(self._switch("tool_use", {**use, "input": {}}))
            if call.arguments:
                piece = {"type": "input_json_delta", "partial_json": call.arguments}
                parts.append(self._delta(piece))
        return b"".join(parts)

    def stream_closing(self, finished: Finished) -> bytes:
        parts = [self._events(self._stream.finish()), self._close()]
        reason, sequence = _stop(finished, bool(self._stream.sent.tool_calls))
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": sequence},
            "usage": _finished_usage(finished),
        }
        parts.append(sse(delta, "message_delta"))
        parts.append(sse({"type": "message_stop"}, "message_stop"))
        return b"".join(parts)


def _tool_use_id(call: ToolCall) -> str:
    return call.id.replace("call_", "toolu_", 1) if call.id.startswith("call_") else call.id


def _tool_use(call: ToolCall) -> dict[str, Any]:
    try:
        arguments = json.loads(call.arguments)
    except ValueError:  # cannot happen for a finished call; kept whole rather than a 500
        arguments = {"arguments": call.arguments}
    return {"type": "tool_use", "id": _tool_use_id(call), "name": call.name, "input": arguments}


def _block_start(index: int, block: dict[str, Any]) -> bytes:
    start = {"type": "content_block_start", "index": index, "content_block": block}
    return sse(start, "content_block_start")


def _block_stop(index: int) -> bytes:
    return sse({"type": "content_block_stop", "index": index}, "content_block_stop")
