"""Several completions in one request (``n`` / ``n_cmpl``), whole and streamed, against a real
worker process through the official ``openai`` client and llama-server's own ``/completion``."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from tests.support.worker_process import WorkerProcess, worker

HELLO: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def child(models_dir: Path) -> Iterator[WorkerProcess]:
    with worker(models_dir / "alpha.gguf", "--parallel", "3", "--ctx-size", "512") as process:
        yield process


@pytest.fixture(scope="module")
def client(child: WorkerProcess) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{child.url}/v1", api_key="x", max_retries=0) as client:
        yield client


def test_chat_n_answers_that_many_choices(client: openai.OpenAI) -> None:
    answer = client.chat.completions.create(
        model="alpha", messages=HELLO, n=3, max_tokens=4, extra_body={"ignore_eos": True}
    )
    assert [c.index for c in answer.choices] == [0, 1, 2]
    assert all(
        c.message.role == "assistant" and c.finish_reason == "length" for c in answer.choices
    )
    assert answer.usage is not None
    # The prompt counts once; every choice's tokens count.
    assert answer.usage.completion_tokens == 12
    single = client.chat.completions.create(model="alpha", messages=HELLO, max_tokens=1)
    assert single.usage is not None
    assert answer.usage.prompt_tokens == single.usage.prompt_tokens


def test_greedy_choices_agree_with_a_single_answer(client: openai.OpenAI) -> None:
    def contents(n: int) -> list[str | None]:
        answer = client.chat.completions.create(
            model="alpha", messages=HELLO, max_tokens=6, temperature=0, n=n
        )
        return [choice.message.content for choice in answer.choices]

    single = contents(1)
    assert contents(2) == single * 2


def test_streamed_choices_interleave_under_one_id(client: openai.OpenAI) -> None:
    chunks = list(
        client.chat.completions.create(
            model="alpha", messages=HELLO, n=2, max_tokens=4, temperature=0, stream=True
        )
    )
    assert len({c.id for c in chunks}) == 1
    texts: dict[int, str] = defaultdict(str)
    finishes: dict[int, str | None] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            texts[choice.index] += choice.delta.content or ""
            if choice.finish_reason:
                finishes[choice.index] = choice.finish_reason
    assert set(finishes) == {0, 1}
    assert texts[0] == texts[1] != ""


def test_n_above_the_slots_is_refused_as_llama_server_refuses_it(child: WorkerProcess) -> None:
    for path, body in (
        ("/v1/chat/completions", {"messages": HELLO, "n": 4}),
        ("/v1/completions", {"prompt": "hi", "n": 0}),
        ("/completion", {"prompt": "hi", "n_cmpl": 9}),
    ):
        response = httpx.post(f"{child.url}{path}", json=body)
        assert response.status_code == 400, path
        error = response.json()["error"]
        assert error["type"] == "invalid_request_error"
        name = "n_cmpl" if "n_cmpl" in body else "n"
        assert error["message"].startswith(f"Field '{name}': Value must be between 1 <= value <= 3")


def test_completion_n_times_several_prompts(child: WorkerProcess) -> None:
    """Each prompt's completions in turn: prompt 0's take indexes 0 and 1, prompt 1's 2 and 3."""
    body = {"prompt": ["a b", "c d e"], "n_cmpl": 2, "n_predict": 2, "temperature": 0}
    answers = httpx.post(f"{child.url}/completion", json=body, timeout=60).json()
    assert [a["index"] for a in answers] == [0, 1, 2, 3]
    assert [a["prompt"] for a in answers] == ["<s> a b", "<s> a b", "<s> c d e", "<s> c d e"]
    oai = httpx.post(
        f"{child.url}/v1/completions", json={"prompt": "a b", "n": 2, "max_tokens": 2}, timeout=60
    ).json()
    assert [c["index"] for c in oai["choices"]] == [0, 1]


def test_streamed_completion_choices_end_with_one_done(child: WorkerProcess) -> None:
    body = {"prompt": "a b", "n": 2, "max_tokens": 3, "stream": True}
    with httpx.stream("POST", f"{child.url}/v1/completions", json=body, timeout=60) as response:
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert lines.count("data: [DONE]") == 1
    assert lines[-1] == "data: [DONE]"
    events = [json.loads(line[6:]) for line in lines[:-1]]
    finished = [e["choices"][0]["index"] for e in events if e["choices"][0]["finish_reason"]]
    assert sorted(finished) == [0, 1]


def test_an_invalid_grammar_is_a_400_however_many_completions_stream(
    child: WorkerProcess,
) -> None:
    """llama.cpp refuses the grammar as each generation is queued, before any byte is sent."""
    for n in (1, 2):
        body = {"messages": HELLO, "n": n, "stream": True, "grammar": "root ::= ("}
        response = httpx.post(f"{child.url}/v1/chat/completions", json=body, timeout=60)
        assert response.status_code == 400, n
        message = response.json()["error"]["message"]
        assert message == "invalid grammar: the grammar does not parse"
