"""Anthropic message bodies and named events (worker.api.anthropic.shapes), from synthetic
results."""

from __future__ import annotations

import pytest

from tests.worker.shapes_support import (
    GENERIC_TOOLS,
    HERMES_THINKING,
    NATIVE,
    PLAIN,
    finished,
    sse_events,
)
from worker.answer.answer_context import AnswerContext
from worker.api.anthropic.shapes import MessagesShape

TOOL_ANSWER = '{"tool_call": {"name": "weather", "arguments": {"city": "Oslo"}}}'


@pytest.mark.parametrize(
    ("reason", "stop_word", "expected"),
    [
        ("stop", None, ("end_turn", None)),
        ("stop", "###", ("stop_sequence", "###")),
        ("length", None, ("max_tokens", None)),
    ],
)
def test_the_whole_message_and_its_stop_reason(
    reason: str, stop_word: str | None, expected: tuple[str, str | None]
) -> None:
    shape = MessagesShape(AnswerContext("m"), PLAIN)
    body = shape.whole("Hi", finished(reason, stop_word))
    assert body["id"].startswith("msg_")
    assert (body["type"], body["role"], body["model"]) == ("message", "assistant", "m")
    assert body["content"] == [{"type": "text", "text": "Hi"}]
    assert (body["stop_reason"], body["stop_sequence"]) == expected
    # As llama-server counts: of a 7-token prompt, 2 the cache held and the 5 others.
    assert body["usage"] == {"input_tokens": 5, "output_tokens": 3, "cache_read_input_tokens": 2}


def test_an_empty_answer_has_no_content_blocks() -> None:
    assert MessagesShape(AnswerContext("m"), PLAIN).whole("", finished())["content"] == []


def test_a_text_stream_announces_the_prompt_and_opens_one_block() -> None:
    shape = MessagesShape(AnswerContext("m", prompt_tokens=7), PLAIN)
    stream = shape.stream_opening(2) + shape.stream_chunk("He") + shape.stream_chunk("")
    stream += shape.stream_chunk("llo") + shape.stream_closing(finished())
    events = sse_events(stream)
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(name == data["type"] for name, data in events)
    start = events[0][1]["message"]
    assert start["usage"] == {"input_tokens": 5, "output_tokens": 0, "cache_read_input_tokens": 2}
    assert (start["content"], start["stop_reason"]) == ([], None)
    assert [data["delta"]["text"] for _, data in events[2:4]] == ["He", "llo"]
    assert events[5][1]["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
    usage = {"input_tokens": 5, "output_tokens": 3, "cache_read_input_tokens": 2}
    assert events[5][1]["usage"] == usage


def test_a_stream_without_text_opens_no_block() -> None:
    shape = MessagesShape(AnswerContext("m"), PLAIN)
    events = sse_events(shape.stream_opening(0) + shape.stream_closing(finished()))
    assert [name for name, _ in events] == ["message_start", "message_delta", "message_stop"]


def test_a_tool_call_streams_as_a_tool_use_block() -> None:
    shape = MessagesShape(AnswerContext("m"), GENERIC_TOOLS)
    cut = TOOL_ANSWER.index('"Oslo"')
    stream = shape.stream_chunk(TOOL_ANSWER[:cut]) + shape.stream_chunk(TOOL_ANSWER[cut:])
    events = sse_events(stream + shape.stream_closing(finished()))
    names = [name for name, _ in events]
    assert names[:4] == ["content_block_start", "content_block_delta", "content_block_delta",
                         "content_block_stop"]  # fmt: skip
    block = events[0][1]["content_block"]
    assert (block["type"], block["name"], block["input"]) == ("tool_use", "weather", {})
    assert block["id"].startswith("toolu_")
    assert [data["delta"]["partial_json"] for _, data in events[1:3]] == ['{"city":', '"Oslo"}']
    assert events[4][1]["delta"]["stop_reason"] == "tool_use"


def test_a_whole_tool_use_answer() -> None:
    body = MessagesShape(AnswerContext("m"), GENERIC_TOOLS).whole(TOOL_ANSWER, finished())
    (block,) = body["content"]
    assert (block["type"], block["name"], block["input"]) == ("tool_use", "weather",
                                                              {"city": "Oslo"})  # fmt: skip
    assert body["stop_reason"] == "tool_use"


def test_thinking_text_and_tool_use_blocks_stream_in_order() -> None:
    shape = MessagesShape(AnswerContext("m"), HERMES_THINKING)
    stream = shape.stream_opening(0) + b"".join(
        shape.stream_chunk(NATIVE[i : i + 6]) for i in range(0, len(NATIVE), 6)
    )
    events = sse_events(stream + shape.stream_closing(finished()))
    starts = [data["content_block"] for name, data in events if name == "content_block_start"]
    assert [block["type"] for block in starts] == ["thinking", "text", "tool_use"]
    assert (starts[2]["name"], starts[2]["input"]) == ("weather", {})
    deltas: dict[int, str] = {}
    signed: list[int] = []
    for name, data in events:
        if name == "content_block_delta":
            delta = data["delta"]
            if delta["type"] == "signature_delta":
                signed.append(data["index"])
                continue
            piece = delta.get("thinking") or delta.get("text") or delta.get("partial_json")
            deltas[data["index"]] = deltas.get(data["index"], "") + piece
    assert deltas == {0: "Hmm.", 1: "Let me check.", 2: '{"city": "Oslo"}'}
    stops = [data["index"] for name, data in events if name == "content_block_stop"]
    assert stops == [0, 1, 2]
    # As Anthropic's API (and llama-server): the thinking block is signed just before it closes.
    assert signed == [0]
    names = [name for name, _ in events]
    first_stop = names.index("content_block_stop")
    assert events[first_stop - 1][1]["delta"] == {"type": "signature_delta", "signature": ""}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_a_thinking_block_left_open_is_signed_when_the_stream_ends() -> None:
    shape = MessagesShape(AnswerContext("m"), HERMES_THINKING)
    stream = shape.stream_opening(0) + shape.stream_chunk("<think>Hmm")
    events = sse_events(stream + shape.stream_closing(finished()))
    names = [name for name, _ in events]
    assert names[-4:] == ["content_block_delta", "content_block_stop", "message_delta",
                          "message_stop"]  # fmt: skip
    assert events[-4][1]["delta"]["type"] == "signature_delta"


def test_a_whole_native_answer_has_a_thinking_block() -> None:
    body = MessagesShape(AnswerContext("m"), HERMES_THINKING).whole(NATIVE, finished())
    assert [block["type"] for block in body["content"]] == ["thinking", "text", "tool_use"]
    assert body["content"][0]["thinking"] == "Hmm."
    assert body["content"][2]["input"] == {"city": "Oslo"}
