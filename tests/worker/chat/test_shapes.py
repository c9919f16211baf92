"""Chat completion bodies and chunks (worker.chat.shapes) from synthetic generation results."""

from __future__ import annotations

import json

from tests.worker.shapes_support import WEATHER_PLAN, finished, sse_events
from worker.chat.shapes import ChatShape, ToolChatShape, chat_shape

USAGE = {
    "prompt_tokens": 7,
    "completion_tokens": 3,
    "total_tokens": 10,
    "prompt_tokens_details": {"cached_tokens": 2},
}
TOOL_ANSWER = '{"tool_call": {"name": "weather", "arguments": {"city": "Oslo"}}}'


def test_the_whole_answer() -> None:
    shape = ChatShape("m")
    body = shape.whole("Hello", finished("length"))
    assert body["id"] == shape.id
    assert body["id"].startswith("chatcmpl-")
    assert (body["object"], body["model"]) == ("chat.completion", "m")
    assert body["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hello"},
            "logprobs": None,
            "finish_reason": "length",
        }
    ]
    assert body["usage"] == USAGE
    assert body["timings"] == finished().timings


def test_the_stream_opens_with_the_role_and_ends_with_done() -> None:
    shape = ChatShape("m")
    stream = shape.stream_opening() + shape.stream_chunk("Hel") + shape.stream_chunk("lo")
    stream += shape.stream_closing(finished())
    events = [data for _, data in sse_events(stream)]
    assert events[-1] == "[DONE]"
    deltas = [event["choices"][0]["delta"] for event in events[:-1]]
    assert deltas == [{"role": "assistant", "content": None}, {"content": "Hel"},
                      {"content": "lo"}, {}]  # fmt: skip
    closing = events[-2]
    assert closing["choices"][0]["finish_reason"] == "stop"
    assert closing["usage"] == USAGE
    assert {event["id"] for event in events[:-1]} == {shape.id}
    assert all(event["object"] == "chat.completion.chunk" for event in events[:-1])


def test_a_tool_call_is_held_then_sent_as_tool_calls() -> None:
    assert WEATHER_PLAN is not None
    shape = ToolChatShape("m", WEATHER_PLAN)
    assert shape.stream_chunk(TOOL_ANSWER[:10]) == b""
    assert shape.stream_chunk(TOOL_ANSWER[10:]) == b""
    closing = sse_events(shape.stream_closing(finished()))[0][1]
    choice = closing["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    (call,) = choice["delta"]["tool_calls"]
    assert call["index"] == 0
    assert call["function"] == {"name": "weather", "arguments": json.dumps({"city": "Oslo"})}


def test_a_whole_tool_call_answer() -> None:
    assert WEATHER_PLAN is not None
    body = ToolChatShape("m", WEATHER_PLAN).whole(TOOL_ANSWER, finished())
    message = body["choices"][0]["message"]
    assert message["content"] is None
    assert message["tool_calls"][0]["function"]["name"] == "weather"
    assert body["choices"][0]["finish_reason"] == "tool_calls"


def test_a_direct_response_with_tools_is_plain_content() -> None:
    assert WEATHER_PLAN is not None
    body = ToolChatShape("m", WEATHER_PLAN).whole('{"response": "Sunny."}', finished())
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "Sunny."}
    assert body["choices"][0]["finish_reason"] == "stop"


def test_a_budget_cut_keeps_length_even_with_tools() -> None:
    assert WEATHER_PLAN is not None
    body = ToolChatShape("m", WEATHER_PLAN).whole(TOOL_ANSWER, finished("length"))
    assert body["choices"][0]["finish_reason"] == "length"


def test_the_route_shape_depends_on_the_tool_plan() -> None:
    assert type(chat_shape("m", None)) is ChatShape
    assert type(chat_shape("m", WEATHER_PLAN)) is ToolChatShape
