"""Answers in OpenAI's Responses shape: one response object, or its stream of named events.

A response cut short by the token budget is ``status: "incomplete"`` with
``incomplete_details``, as in OpenAI's API. Its stream still ends with ``response.completed``,
as llama-server ends every stream: clients written for llama-server (its own tests among them)
and the ``openai`` package's stream helper, whose final response comes only from that event,
wait for it; the response it carries says ``incomplete``.
"""

from __future__ import annotations

import uuid
from typing import Any

from worker.answer.answer_context import AnswerContext
from worker.answer.response_shape import ResponseShape, sse, with_progress, with_timings
from worker.chat.formats import MessageDelta, OutputParser, OutputStream, ToolCall
from worker.engine.generation import Finished, Progress

__all__ = ["ResponsesShape"]


def _hex() -> str:
    return uuid.uuid4().hex[:24]


def _usage(finished: Finished) -> dict[str, Any]:
    return {
        "input_tokens": finished.prompt_tokens,
        "input_tokens_details": {"cached_tokens": finished.cached_tokens},
        "output_tokens": finished.predicted_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": finished.prompt_tokens + finished.predicted_tokens,
    }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


class ResponsesShape(ResponseShape):
    """``/v1/responses``: reasoning, message and ``function_call`` items from one output reading.

    ``echo`` holds the request fields that every response object repeats (tools, temperature…).
    """

    id_prefix, id_digits = "resp_", 24

    def __init__(self, context: AnswerContext, parser: OutputParser, echo: dict[str, Any]) -> None:
        super().__init__(context)
        self._parser = parser
        self._stream = OutputStream(parser)
        self._echo = echo
        self._sequence = 0
        self._items: list[dict[str, Any]] = []  # streamed items, the last one maybe still open
        self._open = False
        self._calls_seen = 0

    def _event(self, kind: str, **fields: Any) -> bytes:
        data = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return sse(data, kind)

    def _response(
        self, status: str, output: list[dict[str, Any]], finished: Finished | None
    ) -> dict[str, Any]:
        incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.context.created,
            "status": status,
            "error": None,
            "incomplete_details": incomplete,
            "model": self.context.model,
            "output": output,
            "usage": _usage(finished) if finished is not None else None,
            **self._echo,
        }

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        status = _status(finished)
        parsed = self._parser.whole(text)
        output: list[dict[str, Any]] = []
        if parsed.reasoning:
            output.append(_reasoning(parsed.reasoning, "completed"))
        if parsed.content or not parsed.tool_calls:
            output.append(_message(f"msg_{_hex()}", parsed.content, status))
        output.extend(_function_call(call) for call in parsed.tool_calls)
        return self._response(status, output, finished)

    def stream_opening(self, cached: int) -> bytes:
        started = self._response("in_progress", [], None)
        events = self._event("response.created", response=started)
        events += self._event("response.in_progress", response=started)
        if self._parser.tools is None and self._parser.thinking is None:
            events += self._start(_message(f"msg_{_hex()}", "", "in_progress"))
        return events

    def stream_chunk(self, text: str) -> bytes:
        return self._events(self._stream.feed(text))

    def stream_progress(self, progress: Progress) -> bytes:
        # As llama-server: prompt progress rides on further response.in_progress events.
        started = self._response("in_progress", [], None)
        return self._event("response.in_progress", response=started, **with_progress({}, progress))

    def stream_closing(self, finished: Finished) -> bytes:
        events = self._events(self._stream.finish())
        if not self._items:
            events += self._start(_message(f"msg_{_hex()}", "", "in_progress"))
        status = _status(finished)
        events += self._close(status)
        return events + self._event(
            "response.completed",
            response=self._response(status, self._items, finished),
            timings=finished.timings,
        )

    def _events(self, delta: MessageDelta) -> bytes:
        events = b""
        if delta.reasoning:
            events += self._into("reasoning", lambda: _reasoning("", "in_progress"))
            events += self._event(
                "response.reasoning_text.delta", **self._ids(), delta=delta.reasoning
            )
            self._items[-1]["content"][0]["text"] += delta.reasoning
        if delta.content:
            events += self._into("message", lambda: _message(f"msg_{_hex()}", "", "in_progress"))
            events += self._event(
                "response.output_text.delta",
                **with_timings({**self._ids(), "delta": delta.content, "logprobs": []}, self.last),
            )
            self._items[-1]["content"][0]["text"] += delta.content
        for index, call in delta.tool_calls:
            if index >= self._calls_seen:
                self._calls_seen = index + 1
                events += self._close("completed") + self._start(
                    {**_function_call(call), "arguments": "", "status": "in_progress"}
                )
            if call.arguments:
                events += self._event(
                    "response.function_call_arguments.delta",
                    item_id=self._items[-1]["id"],
                    output_index=len(self._items) - 1,
                    delta=call.arguments,
                )
                self._items[-1]["arguments"] += call.arguments
        return events

    def _ids(self) -> dict[str, Any]:
        return {"item_id": self._items[-1]["id"], "output_index": len(self._items) - 1,
                "content_index": 0}  # fmt: skip

    def _into(self, kind: str, make: Any) -> bytes:
        """Make sure the open item is a ``kind`` one, closing another and opening it."""
        if self._open and self._items[-1]["type"] == kind:
            return b""
        return self._close("completed") + self._start(make())

    def _start(self, item: dict[str, Any]) -> bytes:
        self._items.append(item)
        self._open = True
        index = len(self._items) - 1
        events = self._event("response.output_item.added", output_index=index, item=item)
        if item["type"] == "message":
            item["content"] = [_text_part("")]
            events += self._event("response.content_part.added", **self._ids(),
                                  part=_text_part(""))  # fmt: skip
        return events

    def _close(self, status: str) -> bytes:
        if not self._open:
            return b""
        self._open = False
        item = self._items[-1]
        item["status"] = status
        ids = self._ids()
        if item["type"] == "message":
            part = item["content"][0]
            events = self._event("response.output_text.done", **ids, text=part["text"],
                                 logprobs=[])  # fmt: skip
            events += self._event("response.content_part.done", **ids, part=part)
        elif item["type"] == "reasoning":
            text = item["content"][0]["text"]
            events = self._event("response.reasoning_text.done", **ids, text=text)
        else:
            item["status"] = "completed"
            events = self._event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=ids["output_index"],
                name=item["name"],
                arguments=item["arguments"],
            )
        index = ids["output_index"]
        return events + self._event("response.output_item.done", output_index=index, item=item)


def _message(item_id: str, text: str, status: str) -> dict[str, Any]:
    content = [_text_part(text)] if status != "in_progress" else []
    return {"type": "message", "id": item_id, "status": status,
            "role": "assistant", "content": content}  # fmt: skip


def _reasoning(text: str, status: str) -> dict[str, Any]:
    return {"type": "reasoning", "id": f"rs_{_hex()}", "status": status, "summary": [],
            "content": [{"type": "reasoning_text", "text": text}]}  # fmt: skip


def _function_call(call: ToolCall) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{_hex()}",
        "call_id": call.id,
        "name": call.name,
        "arguments": call.arguments,
        "status": "completed",
    }


def _status(finished: Finished) -> str:
    return "incomplete" if finished.reason == "length" else "completed"
