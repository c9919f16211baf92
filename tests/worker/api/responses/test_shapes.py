"""Responses objects and named events (worker.api.responses.shapes), from synthetic results."""

from __future__ import annotations

from typing import Any

from tests.worker.shapes_support import (
    GENERIC_TOOLS,
    HERMES_THINKING,
    NATIVE,
    PLAIN,
    finished,
    sse_events,
)
from worker.answer.answer_context import AnswerContext
from worker.api.responses.shapes import ResponsesShape

ECHO: dict[str, Any] = {"instructions": None, "temperature": 0.5, "tools": []}
TOOL_ANSWER = '{"tool_call": {"name": "weather", "arguments": {"city": "Oslo"}}}'


def test_the_whole_response_repeats_the_request_and_counts_tokens() -> None:
    shape = ResponsesShape(AnswerContext("m"), PLAIN, ECHO)
    body = shape.whole("Hi", finished())
    assert body["id"].startswith("resp_")
    assert (body["object"], body["status"], body["model"]) == ("response", "completed", "m")
    assert body["incomplete_details"] is None
    (message,) = body["output"]
    assert (message["type"], message["role"], message["status"]) == (
        "message", "assistant", "completed"
    )  # fmt: skip
    assert message["content"][0]["text"] == "Hi"
    assert body["usage"] == {
        "input_tokens": 7,
        "input_tokens_details": {"cached_tokens": 2},
        "output_tokens": 3,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 10,
    }
    assert body["temperature"] == 0.5


def test_a_budget_cut_is_incomplete() -> None:
    body = ResponsesShape(AnswerContext("m"), PLAIN, ECHO).whole("Hi", finished("length"))
    assert body["status"] == "incomplete"
    assert body["incomplete_details"] == {"reason": "max_output_tokens"}


def test_a_text_stream_numbers_its_events_and_completes() -> None:
    shape = ResponsesShape(AnswerContext("m"), PLAIN, ECHO)
    stream = shape.stream_opening(0) + shape.stream_chunk("He") + shape.stream_chunk("llo")
    stream += shape.stream_closing(finished())
    events = sse_events(stream)
    assert [name for name, _ in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    assert events[6][1]["text"] == "Hello"
    final = events[-1][1]["response"]
    assert final["output"][0]["content"][0]["text"] == "Hello"
    assert final["usage"]["total_tokens"] == 10


def test_a_cut_stream_ends_completed_with_an_incomplete_response() -> None:
    shape = ResponsesShape(AnswerContext("m"), PLAIN, ECHO)
    stream = shape.stream_opening(0) + shape.stream_closing(finished("length"))
    name, data = sse_events(stream)[-1]
    assert name == "response.completed"  # llama-server's one terminal event
    assert data["response"]["status"] == "incomplete"
    assert data["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def test_a_tool_call_streams_as_a_function_call() -> None:
    shape = ResponsesShape(AnswerContext("m"), GENERIC_TOOLS, ECHO)
    opening = sse_events(shape.stream_opening(0))
    assert [name for name, _ in opening] == ["response.created", "response.in_progress"]
    cut = TOOL_ANSWER.index('"Oslo"')
    stream = shape.stream_chunk(TOOL_ANSWER[:cut]) + shape.stream_chunk(TOOL_ANSWER[cut:])
    events = sse_events(stream + shape.stream_closing(finished()))
    assert [name for name, _ in events] == [
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [data["delta"] for _, data in events[1:3]] == ['{"city":', '"Oslo"}']
    item = events[4][1]["item"]
    assert (item["type"], item["name"], item["arguments"]) == (
        "function_call", "weather", '{"city":"Oslo"}'
    )  # fmt: skip
    assert item["call_id"].startswith("call_")
    assert events[0][1]["item"]["arguments"] == ""


def test_a_direct_response_with_tools_is_a_message() -> None:
    shape = ResponsesShape(AnswerContext("m"), GENERIC_TOOLS, ECHO)
    shape.stream_opening(0)
    events = sse_events(shape.stream_chunk('{"response": "Sun') + shape.stream_chunk('ny."}'))
    names = [name for name, _ in events]
    assert names == ["response.output_item.added", "response.content_part.added",
                     "response.output_text.delta", "response.output_text.delta"]  # fmt: skip
    assert [data["delta"] for _, data in events[2:]] == ["Sun", "ny."]


def test_reasoning_message_and_function_call_items_stream_in_order() -> None:
    shape = ResponsesShape(AnswerContext("m"), HERMES_THINKING, ECHO)
    stream = shape.stream_opening(0) + b"".join(
        shape.stream_chunk(NATIVE[i : i + 6]) for i in range(0, len(NATIVE), 6)
    )
    events = sse_events(stream + shape.stream_closing(finished()))
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    added = [data["item"]["type"] for name, data in events if name == "response.output_item.added"]
    assert added == ["reasoning", "message", "function_call"]

    def joined(kind: str) -> str:
        return "".join(data["delta"] for name, data in events if name == kind)

    assert joined("response.reasoning_text.delta") == "Hmm."
    assert joined("response.output_text.delta") == "Let me check."
    assert joined("response.function_call_arguments.delta") == '{"city": "Oslo"}'
    final = events[-1][1]["response"]
    assert [item["type"] for item in final["output"]] == ["reasoning", "message", "function_call"]
    assert final["output"][2]["arguments"] == '{"city": "Oslo"}'
    assert all(item["status"] == "completed" for item in final["output"])


def test_a_whole_native_answer_has_the_same_items() -> None:
    body = ResponsesShape(AnswerContext("m"), HERMES_THINKING, ECHO).whole(NATIVE, finished())
    output = body["output"]
    assert [item["type"] for item in output] == ["reasoning", "message", "function_call"]
    assert output[0]["content"][0]["text"] == "Hmm."
    assert output[2]["name"] == "weather"
