"""What a streamed generation reports besides its text: ``return_progress`` (the prompt's
progress, batch by batch), ``timings_per_token`` and OpenAI's ``stream_options.include_usage``,
against a real worker process through the official ``openai`` client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam

from tests.support.worker_process import WorkerProcess, worker

BATCH = 16
# Long enough to take several batches of BATCH tokens.
LONG: list[ChatCompletionMessageParam] = [
    {"role": "user", "content": "once upon a time there was a little dog " * 4}
]
HELLO: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def child(models_dir: Path) -> Iterator[WorkerProcess]:
    args = ("--parallel", "1", "--ctx-size", "512", "--batch-size", str(BATCH))
    with worker(models_dir / "alpha.gguf", *args) as process:
        yield process


@pytest.fixture(scope="module")
def client(child: WorkerProcess) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{child.url}/v1", api_key="x", max_retries=0) as client:
        yield client


def _stream(
    client: openai.OpenAI,
    messages: list[ChatCompletionMessageParam],
    max_tokens: int,
    **extra: Any,
) -> list[ChatCompletionChunk]:
    chunks = client.chat.completions.create(
        model="alpha", messages=messages, max_tokens=max_tokens, stream=True, extra_body=extra
    )
    return list(chunks)


def _extra(chunk: ChatCompletionChunk) -> dict[str, Any]:
    """The fields llama-server adds to OpenAI's chunk."""
    return chunk.model_extra or {}


def _progress(chunks: list[ChatCompletionChunk]) -> list[dict[str, int]]:
    return [_extra(c)["prompt_progress"] for c in chunks if "prompt_progress" in _extra(c)]


def _text(chunk: ChatCompletionChunk) -> str | None:
    return chunk.choices[0].delta.content if chunk.choices else None


def _prompt_tokens(child: WorkerProcess, messages: list[ChatCompletionMessageParam]) -> int:
    url = f"{child.url}/chat/completions/input_tokens"
    return int(httpx.post(url, json={"messages": messages}).json()["input_tokens"])


def test_return_progress_reports_each_prompt_batch(
    client: openai.OpenAI, child: WorkerProcess
) -> None:
    total = _prompt_tokens(child, LONG)
    assert total > 2 * BATCH
    chunks = _stream(client, LONG, 2, return_progress=True, cache_prompt=False)
    progress = _progress(chunks)
    # One as the prompt starts (nothing read yet), then one per batch, the last at the end: the
    # last token is read in a batch of its own (docs/serving.md, "Repeatable answers").
    assert [p["processed"] for p in progress] == [*range(0, total - 1, BATCH), total - 1, total]
    assert all(p["total"] == total and p["cache"] == 0 for p in progress)
    # Every report comes before the first token, as an opening chunk with no text.
    reports = [i for i, c in enumerate(chunks) if "prompt_progress" in _extra(c)]
    assert max(reports) < next(i for i, c in enumerate(chunks) if _text(c))
    assert all(_text(chunks[i]) is None for i in reports)


def test_progress_starts_from_the_cached_prompt(
    client: openai.OpenAI, child: WorkerProcess
) -> None:
    _stream(client, LONG, 2)
    progress = _progress(_stream(client, LONG, 2, return_progress=True))
    total = _prompt_tokens(child, LONG)
    # All but the last token comes from the cache: one report as it starts, one after the batch.
    assert [(p["cache"], p["processed"]) for p in progress] == [
        (total - 1, total - 1),
        (total - 1, total),
    ]


def test_no_progress_unless_asked_or_when_not_streamed(
    client: openai.OpenAI, child: WorkerProcess
) -> None:
    assert _progress(_stream(client, LONG, 2, cache_prompt=False)) == []
    whole = httpx.post(
        f"{child.url}/completion",
        json={"prompt": "once upon a time", "n_predict": 2, "return_progress": True},
    ).json()
    assert "prompt_progress" not in whole


def test_completion_streams_report_progress_in_their_own_shape(child: WorkerProcess) -> None:
    body = {"prompt": "once upon a time " * 8, "n_predict": 2, "stream": True,
            "return_progress": True, "cache_prompt": False}  # fmt: skip
    with httpx.stream("POST", f"{child.url}/completion", json=body) as response:
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    reports = [e for e in (json.loads(line[6:]) for line in lines) if "prompt_progress" in e]
    assert len(reports) >= 3
    assert all(e["content"] == "" and e["stop"] is False for e in reports)
    last = reports[-1]["prompt_progress"]
    assert last["processed"] == last["total"] == reports[-1]["tokens_evaluated"]


def test_timings_per_token_puts_timings_in_every_text_chunk(client: openai.OpenAI) -> None:
    chunks = _stream(client, HELLO, 4, timings_per_token=True, ignore_eos=True)
    texts = [c for c in chunks if _text(c)]
    assert texts
    counts = [_extra(c)["timings"]["predicted_n"] for c in texts]
    assert counts == sorted(counts)
    assert counts[-1] <= 4
    assert "timings" not in _extra(chunks[0])  # the opening chunk has nothing to time
    plain = _stream(client, HELLO, 4)
    assert not any("timings" in _extra(c) for c in plain if _text(c))


def test_include_usage_sends_the_usage_in_a_last_chunk_without_choices(
    client: openai.OpenAI,
) -> None:
    chunks = _stream(client, HELLO, 3, stream_options={"include_usage": True})
    last, finish = chunks[-1], chunks[-2]
    assert last.choices == []
    assert last.usage is not None
    assert last.usage.completion_tokens <= 3
    assert "timings" in _extra(last)
    assert finish.choices[0].finish_reason is not None
    assert finish.usage is None


def test_progress_reports_carry_the_prompts_timings_when_asked(child: WorkerProcess) -> None:
    body = {"prompt": "once upon a time " * 8, "n_predict": 2, "stream": True,
            "return_progress": True, "timings_per_token": True, "cache_prompt": False}  # fmt: skip
    with httpx.stream("POST", f"{child.url}/completion", json=body) as response:
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    reports = [e for e in (json.loads(line[6:]) for line in lines) if "prompt_progress" in e]
    timings = [report["timings"] for report in reports]
    # Before any prompt token is read, nothing is timed; then the prompt read so far.
    assert (timings[0]["prompt_n"], timings[0]["prompt_ms"]) == (0, 0.0)
    assert [t["prompt_n"] for t in timings] == [r["prompt_progress"]["processed"] for r in reports]
    assert [t["prompt_ms"] for t in timings] == sorted(t["prompt_ms"] for t in timings)
    assert all(t["predicted_n"] == 0 and t["predicted_ms"] == 0.0 for t in timings)
