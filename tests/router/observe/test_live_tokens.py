"""Tokens counted as they are generated (issue 54): over real HTTP with real generation, a
stream's record has a live count and tokens/s while it generates, the activity samples count
tokens in the interval they were generated (not when their request ended), and Ollama's routes
show tokens/s and cached tokens as the others do (docs/operations.md, "Activity")."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import ollama
import openai
import pytest

from tests.support.router_process import RouterProcess, running_router

# Random weights rarely stop by themselves: ignore_eos makes a stream exactly max_tokens long.
LONG = {"ignore_eos": True}
MAX_TOKENS = 30_000  # many seconds of generation, within the context below


@pytest.fixture(scope="module")
def router(models_dir: Path) -> Iterator[RouterProcess]:
    with running_router(["--models-dir", str(models_dir), "--ctx-size", "32768"]) as process:
        yield process


def _activity(router: RouterProcess) -> dict[str, Any]:
    answer = httpx.get(f"{router.url}/activity", timeout=30)
    assert answer.status_code == 200, answer.text
    snapshot: dict[str, Any] = answer.json()
    return snapshot


def _in_flight(snapshot: dict[str, Any]) -> dict[str, Any]:
    records: list[dict[str, Any]] = [r for r in snapshot["requests"] if r.get("ended") is None]
    assert len(records) == 1
    return records[0]


def _stream(client: openai.OpenAI, max_tokens: int = MAX_TOKENS) -> openai.Stream[Any]:
    return client.chat.completions.create(
        model="alpha",
        messages=[{"role": "user", "content": "Tell me a long story."}],
        max_tokens=max_tokens,
        stream=True,
        extra_body=LONG,
    )


def test_a_streams_record_counts_its_tokens_and_rate_while_it_generates(
    router: RouterProcess,
) -> None:
    with openai.OpenAI(base_url=f"{router.url}/v1", api_key="none", max_retries=0) as client:
        read = 0
        with _stream(client, 3000) as stream:
            for chunk in stream:
                read += bool(chunk.choices and chunk.choices[0].delta.content)
                if read == 1000:
                    live = _in_flight(_activity(router))
        finished = next(r for r in _activity(router)["requests"] if r["id"] == live["id"])
    assert live["state"] == "generating"
    # Counted as the worker sent them: at least what the client had read, at most all.
    assert 1000 <= live["completion_tokens"] <= 3000
    assert live["tokens_per_s"] > 0
    # At the end the worker's own figures replace the live ones.
    assert finished["completion_tokens"] == 3000
    assert finished["tokens_per_s"] > 0


def test_samples_count_tokens_in_the_interval_they_were_generated(router: RouterProcess) -> None:
    client = openai.OpenAI(base_url=f"{router.url}/v1", api_key="none", max_retries=0)
    # An interval that began after every other request had ended, taken while a stream
    # generates: the stream stops once there is one; one that ends first is followed by another.
    during: dict[str, Any] | None = None
    for _ in range(10):
        with _stream(client) as stream:
            for index, _chunk in enumerate(stream):
                if index % 50 == 0 and (during := _interval_while_generating(router)):
                    break
        if during is not None:
            break
    client.close()
    assert during is not None, "no interval was wholly a stream's"
    # Old code counted only requests that had ended in the interval: 0 while one generates.
    assert during["models"]["alpha"]["tokens_per_s"] > 0


def _interval_while_generating(router: RouterProcess) -> dict[str, Any] | None:
    snapshot = _activity(router)
    first_token = _in_flight(snapshot)["first_token"] or 1e18
    ended = max((r["ended"] for r in snapshot["requests"] if r.get("ended")), default=0.0)
    samples: list[dict[str, Any]] = snapshot["samples"]
    for before, sample in itertools.pairwise(samples):
        if before["at"] > ended and sample["at"] > first_token:
            return sample
    return None


def test_the_samples_add_up_to_the_tokens_the_requests_report(models_dir: Path) -> None:
    with running_router(["--models-dir", str(models_dir), "--ctx-size", "16384"]) as router:
        while not _activity(router)["samples"]:  # the first sample opens the first interval
            time.sleep(0.2)
        with openai.OpenAI(base_url=f"{router.url}/v1", api_key="none", max_retries=0) as client:
            for _ in range(3):
                with _stream(client, 2000) as stream:
                    for _chunk in stream:
                        pass
        ended = max(r["ended"] for r in _activity(router)["requests"])
        while (snapshot := _activity(router))["samples"][-1]["at"] <= ended:
            time.sleep(0.2)
    samples = snapshot["samples"]
    counted = sum(
        s["models"].get("alpha", {}).get("tokens_per_s", 0.0) * (s["at"] - before["at"])
        for before, s in itertools.pairwise(samples)
    )
    reported = sum(r["completion_tokens"] for r in snapshot["requests"])
    assert reported == 6000
    assert counted == pytest.approx(reported, abs=len(samples))  # tokens/s kept to 0.01


def test_ollamas_routes_show_tokens_per_second_and_cached_tokens(router: RouterProcess) -> None:
    with ollama.Client(host=router.url, timeout=120) as client:
        messages = [{"role": "user", "content": "The same question, twice: what is a corral?"}]
        for _ in range(2):
            client.chat(model="alpha", messages=messages, options={"num_predict": 8})
        for part in client.chat(
            model="alpha", messages=messages, options={"num_predict": 8}, stream=True
        ):
            assert part is not None
    records = [r for r in _activity(router)["requests"] if r["route"] == "/api/chat"]
    assert len(records) == 3
    for record in records:
        assert 0 < record["completion_tokens"] <= 8
        assert record["tokens_per_s"] > 0
    # The second and third ask what the first did: the worker reused its prompt's cache.
    assert all(r["cached_tokens"] > 0 for r in records[:2])  # newest first
