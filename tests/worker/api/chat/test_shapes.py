"""Chat completion bodies and chunks (worker.api.chat.shapes) from synthetic generation results."""

from __future__ import annotations

import json
from typing import Any

from tests.worker.shapes_support import (
    GENERIC_TOOLS,
    HERMES_THINKING,
    PLAIN,
    finished,
    sse_events,
)
from worker.answer.answer_context import AnswerContext
from worker.api.chat.shapes import ChatShape

USAGE = {
    "prompt_tokens": 7,
    "completion_tokens": 3,
    "total_tokens": 10,
    "prompt_tokens_details": {"cached_tokens": 2},
}
TOOL_ANSWER = '{"tool_call": {"name": "weather", "arguments": {"city": "Oslo"}}}'


def test_the_whole_answer() -> None:
    shape = ChatShape(AnswerContext("m"), PLAIN)
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
    shape = ChatShape(AnswerContext("m"), PLAIN)
    stream = shape.stream_opening(0) + shape.stream_chunk("Hel") + shape.stream_chunk("lo")
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


def test_a_generic_tool_call_streams_its_name_then_its_arguments() -> None:
    # As llama-server's generic format: nothing before the name is whole, then the call with
    # its name, then argument text as the model writes it.
    shape = ChatShape(AnswerContext("m"), GENERIC_TOOLS)
    assert shape.stream_chunk(TOOL_ANSWER[:30]) == b""
    cut = TOOL_ANSWER.index('"Oslo"')
    stream = shape.stream_chunk(TOOL_ANSWER[30:cut]) + shape.stream_chunk(TOOL_ANSWER[cut:])
    *events, done = [data for _, data in sse_events(stream + shape.stream_closing(finished()))]
    deltas = [event["choices"][0]["delta"] for event in events]
    calls = [delta["tool_calls"][0] for delta in deltas if "tool_calls" in delta]
    assert calls[0]["id"].startswith("call_")
    assert calls[0]["function"] == {"name": "weather", "arguments": '{"city":'}
    assert [c["function"] for c in calls[1:]] == [{"arguments": '"Oslo"}'}]
    assert (done, events[-1]["choices"][0]["finish_reason"]) == ("[DONE]", "tool_calls")


def test_a_generic_response_streams_as_content() -> None:
    shape = ChatShape(AnswerContext("m"), GENERIC_TOOLS)
    # An escape still arriving waits for the piece that completes it.
    pieces = ['{"response": "Sun', "ny \\", '"and\\" warm', '."}']
    assert [d.get("content") for d in _deltas(shape, pieces)[:-1]] == [
        "Sun", "ny ", '"and" warm', "."
    ]  # fmt: skip


def test_a_generic_call_cut_short_is_a_partial_call() -> None:
    # llama-server reads an answer that did not end at EOS as a stream's prefix: the call so
    # far, with finish_reason length (docs/tool-calls.md), never the raw JSON as content.
    cut = TOOL_ANSWER[: TOOL_ANSWER.index("Oslo") + 2]
    body = ChatShape(AnswerContext("m"), GENERIC_TOOLS).whole(cut, finished("length"))
    message = body["choices"][0]["message"]
    assert message["content"] is None
    assert message["tool_calls"][0]["function"] == {"name": "weather", "arguments": '{"city":"Os'}
    assert body["choices"][0]["finish_reason"] == "length"


def _deltas(shape: ChatShape, pieces: list[str]) -> list[dict[str, Any]]:
    stream = shape.stream_opening(0) + b"".join(shape.stream_chunk(p) for p in pieces)
    events = [data for _, data in sse_events(stream + shape.stream_closing(finished()))]
    return [event["choices"][0]["delta"] for event in events[1:-1]]


def test_native_reasoning_content_and_tool_calls_stream_as_openai_does() -> None:
    text = (
        '<think>Need weather.</think>Let me look.<tool_call>\n{"name": "weather", '
        '"arguments": {"city": "Oslo"}}\n</tool_call>'
    )
    deltas = _deltas(
        ChatShape(AnswerContext("m"), HERMES_THINKING),
        [text[i : i + 7] for i in range(0, len(text), 7)],
    )
    reasoning = "".join(d.get("reasoning_content", "") for d in deltas)
    content = "".join(d.get("content", "") for d in deltas)
    calls = [call for d in deltas for call in d.get("tool_calls", [])]
    assert (reasoning, content) == ("Need weather.", "Let me look.")
    first, *rest = calls
    assert (first["index"], first["type"], first["function"]["name"]) == (0, "function", "weather")
    assert first["id"].startswith("call_")
    assert all(set(piece) == {"index", "function"} for piece in rest)  # no id nor name again
    arguments = first["function"]["arguments"] + "".join(p["function"]["arguments"] for p in rest)
    assert json.loads(arguments) == {"city": "Oslo"}
    assert len(rest) > 1  # the arguments arrived in pieces, not at the end


def test_a_whole_native_answer_has_reasoning_and_tool_calls() -> None:
    text = '<think>Hmm.</think><tool_call>{"name": "weather", "arguments": {}}</tool_call>'
    body = ChatShape(AnswerContext("m"), HERMES_THINKING).whole(text, finished())
    message = body["choices"][0]["message"]
    assert (message["content"], message["reasoning_content"]) == (None, "Hmm.")
    assert message["tool_calls"][0]["function"] == {"name": "weather", "arguments": "{}"}
    assert body["choices"][0]["finish_reason"] == "tool_calls"


def test_a_malformed_native_tool_call_is_returned_as_text() -> None:
    text = '<tool_call>{"name": "weather", "arguments": {"city": </tool_call>'
    body = ChatShape(AnswerContext("m"), HERMES_THINKING).whole(text, finished())
    assert body["choices"][0]["message"] == {"role": "assistant", "content": text}
    assert body["choices"][0]["finish_reason"] == "stop"
    deltas = _deltas(ChatShape(AnswerContext("m"), HERMES_THINKING), [text[:5], text[5:]])
    assert "".join(d.get("content", "") for d in deltas) == text
    assert not any("tool_calls" in d for d in deltas)


def test_a_whole_tool_call_answer() -> None:
    body = ChatShape(AnswerContext("m"), GENERIC_TOOLS).whole(TOOL_ANSWER, finished())
    message = body["choices"][0]["message"]
    assert message["content"] is None
    assert message["tool_calls"][0]["function"]["name"] == "weather"
    assert body["choices"][0]["finish_reason"] == "tool_calls"


def test_a_direct_response_with_tools_is_plain_content() -> None:
    body = ChatShape(AnswerContext("m"), GENERIC_TOOLS).whole('{"response": "Sunny."}', finished())
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "Sunny."}
    assert body["choices"][0]["finish_reason"] == "stop"


def test_a_budget_cut_keeps_length_even_with_tools() -> None:
    body = ChatShape(AnswerContext("m"), GENERIC_TOOLS).whole(TOOL_ANSWER, finished("length"))
    assert body["choices"][0]["finish_reason"] == "length"
