"""Answers in Anthropic's Messages shape: one message, or its stream of named events.

Usage counts: ``input_tokens`` is the whole prompt, cached or not, so it always equals
``/v1/messages/count_tokens``; ``cache_read_input_tokens`` says how many of them were reused
from the prompt cache (llama-server instead takes the reused prefix out of ``input_tokens``,
which the stream's first event cannot know yet).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from worker.batching import Finished
from worker.response_shape import ResponseShape, sse
from worker.tools import ToolPlan

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


def _usage(finished: Finished) -> dict[str, int]:
    return {
        "input_tokens": finished.prompt_tokens,
        "output_tokens": finished.predicted_tokens,
        "cache_read_input_tokens": finished.cached_tokens,
    }


class MessagesShape(ResponseShape):
    """``/v1/messages``. With tools, the constrained JSON answer is held and sent at the end."""

    def __init__(self, model: str, plan: ToolPlan | None) -> None:
        super().__init__(model, "msg")
        self.id = f"msg_{uuid.uuid4().hex[:24]}"
        self._plan = plan
        self._held: list[str] = []
        self._text_open = False  # a streamed text block has been started

    def _blocks(self, text: str) -> tuple[list[dict[str, Any]], bool]:
        """The content blocks for the whole answer, and whether it calls a tool."""
        if self._plan is None:
            return ([{"type": "text", "text": text}] if text else []), False
        answer = self._plan.parse(text)
        blocks: list[dict[str, Any]] = []
        if answer.content:
            blocks.append({"type": "text", "text": answer.content})
        for call in answer.tool_calls:
            function = call["function"]
            blocks.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{uuid.uuid4().hex[:24]}",
                    "name": function["name"],
                    "input": json.loads(function["arguments"]),
                }
            )
        return blocks, bool(answer.tool_calls)

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
            "model": self.model,
            "content": content,
            "stop_reason": stop[0],
            "stop_sequence": stop[1],
            "usage": usage,
        }

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        blocks, used_tool = self._blocks(text)
        return self._message(blocks, _stop(finished, used_tool), _usage(finished))

    def stream_opening(self) -> bytes:
        usage = {
            "input_tokens": self.prompt_tokens,
            "output_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        message = self._message([], (None, None), usage)
        return sse({"type": "message_start", "message": message}, "message_start")

    def stream_chunk(self, text: str) -> bytes:
        if self._plan is not None:
            self._held.append(text)  # a tool call is only known once its JSON is complete
            return b""
        if not text:
            return b""
        opening = b"" if self._text_open else _block_start(0, {"type": "text", "text": ""})
        self._text_open = True
        delta = {"type": "text_delta", "text": text}
        event = {"type": "content_block_delta", "index": 0, "delta": delta}
        return opening + sse(event, "content_block_delta")

    def stream_closing(self, finished: Finished) -> bytes:
        parts: list[bytes] = []
        used_tool = False
        if self._plan is not None:
            blocks, used_tool = self._blocks("".join(self._held))
            for index, block in enumerate(blocks):
                parts.append(_streamed_block(index, block))
        elif self._text_open:
            parts.append(_block_stop(0))
        reason, sequence = _stop(finished, used_tool)
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": sequence},
            "usage": _usage(finished),
        }
        parts.append(sse(delta, "message_delta"))
        parts.append(sse({"type": "message_stop"}, "message_stop"))
        return b"".join(parts)


def _block_start(index: int, block: dict[str, Any]) -> bytes:
    start = {"type": "content_block_start", "index": index, "content_block": block}
    return sse(start, "content_block_start")


def _block_stop(index: int) -> bytes:
    return sse({"type": "content_block_stop", "index": index}, "content_block_stop")


def _streamed_block(index: int, block: dict[str, Any]) -> bytes:
    """A finished block as Anthropic streams one: start (empty), one delta, stop."""
    if block["type"] == "text":
        start = _block_start(index, {"type": "text", "text": ""})
        delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
    else:
        start = _block_start(index, {**block, "input": {}})
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    event = {"type": "content_block_delta", "index": index, "delta": delta}
    return start + sse(event, "content_block_delta") + _block_stop(index)
