"""Answers in OpenAI's Responses shape: one response object, or its stream of named events.

A response cut short by the token budget is ``status: "incomplete"`` and its stream ends with
``response.incomplete`` rather than ``response.completed``, as OpenAI's own API does.
"""

from __future__ import annotations

import uuid
from typing import Any

from worker.batching import Finished
from worker.response_shape import ResponseShape, sse
from worker.tools import ToolPlan

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
    """``/v1/responses``. With tools, the constrained JSON answer is held and sent at the end.

    ``echo`` holds the request fields that every response object repeats (tools, temperature…).
    """

    def __init__(self, model: str, plan: ToolPlan | None, echo: dict[str, Any]) -> None:
        super().__init__(model, "resp")
        self.id = f"resp_{_hex()}"
        self._plan = plan
        self._echo = echo
        self._held: list[str] = []
        self._sequence = 0
        self._message_id = f"msg_{_hex()}"

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
            "created_at": self.created,
            "status": status,
            "error": None,
            "incomplete_details": incomplete,
            "model": self.model,
            "output": output,
            "usage": _usage(finished) if finished is not None else None,
            **self._echo,
        }

    def _message(self, text: str, status: str) -> dict[str, Any]:
        content = [_text_part(text)] if status != "in_progress" else []
        return {"type": "message", "id": self._message_id, "status": status,
                "role": "assistant", "content": content}  # fmt: skip

    def _output(self, text: str, status: str) -> list[dict[str, Any]]:
        if self._plan is None:
            return [self._message(text, status)]
        answer = self._plan.parse(text)
        if not answer.tool_calls:
            return [self._message(answer.content or "", status)]
        return [
            {
                "type": "function_call",
                "id": f"fc_{_hex()}",
                "call_id": call["id"],
                "name": call["function"]["name"],
                "arguments": call["function"]["arguments"],
                "status": "completed",
            }
            for call in answer.tool_calls
        ]

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        status = _status(finished)
        return self._response(status, self._output(text, status), finished)

    def stream_opening(self) -> bytes:
        started = self._response("in_progress", [], None)
        events = self._event("response.created", response=started)
        events += self._event("response.in_progress", response=started)
        if self._plan is None:  # plain text: the message item is certain, open it at once
            events += self._message_opening()
        return events

    def stream_chunk(self, text: str) -> bytes:
        self._held.append(text)
        if self._plan is not None or not text:
            return b""  # a tool call is only known once its JSON is complete
        return self._text_delta(text)

    def stream_closing(self, finished: Finished) -> bytes:
        status = _status(finished)
        output = self._output("".join(self._held), status)
        events = b""
        for index, item in enumerate(output):
            if item["type"] == "message":
                if self._plan is not None:  # held until now: open it and send the text at once
                    events += self._message_opening()
                    text = item["content"][0]["text"]
                    events += self._text_delta(text) if text else b""
                events += self._message_closing(item)
            else:
                events += self._function_call(index, item)
        terminal = "response.incomplete" if status == "incomplete" else "response.completed"
        return events + self._event(terminal, response=self._response(status, output, finished))

    def _message_opening(self) -> bytes:
        item = self._message("", "in_progress")
        ids = {"item_id": self._message_id, "output_index": 0, "content_index": 0}
        return self._event("response.output_item.added", output_index=0, item=item) + self._event(
            "response.content_part.added", **ids, part=_text_part("")
        )

    def _text_delta(self, text: str) -> bytes:
        return self._event(
            "response.output_text.delta",
            item_id=self._message_id,
            output_index=0,
            content_index=0,
            delta=text,
            logprobs=[],
        )

    def _message_closing(self, item: dict[str, Any]) -> bytes:
        part = item["content"][0]
        ids = {"item_id": self._message_id, "output_index": 0, "content_index": 0}
        return (
            self._event("response.output_text.done", **ids, text=part["text"], logprobs=[])
            + self._event("response.content_part.done", **ids, part=part)
            + self._event("response.output_item.done", output_index=0, item=item)
        )

    def _function_call(self, index: int, item: dict[str, Any]) -> bytes:
        ids = {"item_id": item["id"], "output_index": index}
        opened = {**item, "arguments": "", "status": "in_progress"}
        return (
            self._event("response.output_item.added", output_index=index, item=opened)
            + self._event("response.function_call_arguments.delta", **ids, delta=item["arguments"])
            + self._event(
                "response.function_call_arguments.done",
                **ids,
                name=item["name"],
                arguments=item["arguments"],
            )
            + self._event("response.output_item.done", output_index=index, item=item)
        )


def _status(finished: Finished) -> str:
    return "incomplete" if finished.reason == "length" else "completed"
