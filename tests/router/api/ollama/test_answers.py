"""The worker's OpenAI-shaped answers, whole and streamed (cut anywhere), as Ollama's objects:
tool calls whole with their arguments as objects, thinking, the done reason and counters."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from corral.http.errors import ApiError
from router.api.ollama.answers import OllamaAnswer

CALL_DELTAS: list[dict[str, Any]] = [
    {"reasoning_content": "Weather, "},
    {"reasoning_content": "so a tool."},
    {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                     "function": {"name": "get_weather", "arguments": '{"city": '}}]},
    {"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]},
    {"tool_calls": [{"index": 1, "id": "c2", "type": "function",
                     "function": {"name": "get_time", "arguments": "{}"}}]},
]  # fmt: skip
USAGE: dict[str, Any] = {
    "choices": [],
    "usage": {"prompt_tokens": 12, "completion_tokens": 9},
    "timings": {"prompt_ms": 1.5, "predicted_ms": 20.0},
}


def _sse(deltas: list[dict[str, Any]], finish: str) -> bytes:
    chunks = [
        {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in deltas
    ]
    last: dict[str, Any] = {"index": 0, "delta": {}, "finish_reason": finish}
    chunks.append({"choices": [last]})
    chunks.append(USAGE)
    events = [b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks]
    return b"".join(events) + b"data: [DONE]\n\n"


def _answer(*, chat: bool = True, streamed: bool = True) -> OllamaAnswer:
    return OllamaAnswer(
        "m:latest", chat=chat, streamed=streamed, started=0.0, load_seconds=lambda: 0.5
    )


async def _lines(answer: OllamaAnswer, data: bytes, cut: int) -> list[dict[str, Any]]:
    async def pieces() -> AsyncIterator[bytes]:
        for start in range(0, len(data), cut):
            yield data[start : start + cut]

    out = b"".join([piece async for piece in answer.stream(pieces())])
    assert out.endswith(b"\n")
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.anyio
@pytest.mark.parametrize("cut", [1, 7, 100_000])
async def test_a_streamed_tool_call_comes_whole_before_the_last_object(cut: int) -> None:
    lines = await _lines(_answer(), _sse(CALL_DELTAS, "tool_calls"), cut)
    thinking = "".join(line["message"].get("thinking", "") for line in lines)
    assert thinking == "Weather, so a tool."
    calls, last = lines[-2], lines[-1]
    assert calls["done"] is False
    assert calls["message"]["tool_calls"] == [
        {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        {"function": {"name": "get_time", "arguments": {}}},
    ]
    assert last["done"] is True
    assert last["done_reason"] == "stop"
    assert last["load_duration"] == 500_000_000
    counters = {
        k: last[k]
        for k in ("prompt_eval_count", "eval_count", "prompt_eval_duration", "eval_duration")
    }
    assert counters == {
        "prompt_eval_count": 12,
        "eval_count": 9,
        "prompt_eval_duration": 1_500_000,
        "eval_duration": 20_000_000,
    }


def test_a_whole_answer_with_calls_and_thinking() -> None:
    body = {
        "choices": [{
            "index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": None, "reasoning_content": "hm",
                        "tool_calls": [{"id": "c", "type": "function",
                                        "function": {"name": "f", "arguments": '{"x": 1}'}}]},
        }],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4},
    }  # fmt: skip
    status, out = _answer(streamed=False).whole(200, json.dumps(body).encode())
    value = json.loads(out)
    assert status == 200
    assert value["message"] == {
        "role": "assistant", "content": "", "thinking": "hm",
        "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}],
    }  # fmt: skip
    assert (value["done"], value["done_reason"], value["eval_count"]) == (True, "stop", 4)


def test_an_error_answer_is_ollamas_error_with_its_status() -> None:
    error = {"error": {"code": 400, "message": "bad thing", "type": "invalid_request_error"}}
    assert _answer().whole(400, json.dumps(error).encode()) == (400, b'{"error":"bad thing"}')


@pytest.mark.anyio
async def test_generate_answers_are_responses_and_a_cut_stream_ends_with_an_error() -> None:
    answer = _answer(chat=False)
    lines = await _lines(answer, _sse([{"content": "Hel"}, {"content": "lo"}], "length"), 5)
    assert "".join(line["response"] for line in lines) == "Hello"
    assert (lines[-1]["done"], lines[-1]["done_reason"]) == (True, "length")
    error = ApiError(500, "model 'm' stopped while answering")
    assert answer.error(error) == b'{"error":"model \'m\' stopped while answering"}\n'
