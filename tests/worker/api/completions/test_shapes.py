"""Raw-prompt completion bodies (worker.api.completions.shapes) from synthetic generation
results."""

from __future__ import annotations

import pytest

from tests.worker.shapes_support import finished, sse_events
from worker.answer.answer_context import AnswerContext
from worker.api.completions.shapes import NativeShape, TextShape


def test_openai_text_completion_whole_and_streamed() -> None:
    shape = TextShape(AnswerContext("m"))
    body = shape.whole("abc", finished())
    assert (body["object"], body["model"]) == ("text_completion", "m")
    assert body["id"].startswith("cmpl-")
    assert body["choices"][0] == {"index": 0, "text": "abc", "logprobs": None,
                                  "finish_reason": "stop"}  # fmt: skip
    assert body["usage"]["total_tokens"] == 10
    assert shape.stream_opening(0) == b""
    stream = shape.stream_chunk("a") + shape.stream_closing(finished("length"))
    events = [data for _, data in sse_events(stream)]
    assert events[0]["choices"][0]["text"] == "a"
    assert events[1]["choices"][0] == {"index": 0, "text": "", "logprobs": None,
                                       "finish_reason": "length"}  # fmt: skip
    assert events[2] == "[DONE]"


@pytest.mark.parametrize(
    ("reason", "stop_word", "stop_type"),
    [("stop", None, "eos"), ("stop", "###", "word"), ("length", None, "limit")],
)
def test_native_completion_says_why_it_stopped(
    reason: str, stop_word: str | None, stop_type: str
) -> None:
    body = NativeShape(AnswerContext("m")).whole("abc", finished(reason, stop_word))
    assert body["stop_type"] == stop_type
    assert body["stopping_word"] == (stop_word or "")
    assert (body["content"], body["stop"], body["model"]) == ("abc", True, "m")
    assert (body["tokens_predicted"], body["tokens_evaluated"], body["tokens_cached"]) == (3, 7, 2)


def test_native_stream_has_no_done_marker() -> None:
    shape = NativeShape(AnswerContext("m"))
    stream = shape.stream_chunk("x") + shape.stream_closing(finished())
    events = [data for _, data in sse_events(stream)]
    # No token was observed for this piece, so it names none (llama-server: its token ids).
    assert events[0] == {"content": "x", "tokens": [], "stop": False, "id_slot": 0, "index": 0}
    assert events[-1]["stop"] is True
    assert events[-1]["content"] == ""
    assert len(events) == 2
