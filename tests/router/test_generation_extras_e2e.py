"""llama-server's request extras through ``corral serve`` with one model: ``-v/--verbose``
reaches the worker, and prompt progress chunks and several choices come through the proxy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.router_process import RouterProcess, running_router

CHAT = [{"role": "user", "content": "once upon a time there was a little dog " * 4}]


@pytest.fixture(scope="module")
def single(models_dir: Path) -> Iterator[RouterProcess]:
    args = ["-m", str(models_dir / "alpha.gguf"), "-v", "--batch-size", "16", "-np", "2"]
    with running_router([*args, "--ctx-size", "512"]) as process:
        yield process


def test_verbose_reaches_the_worker(single: RouterProcess) -> None:
    answer = single.client.post("/v1/chat/completions", json={"messages": CHAT, "max_tokens": 2})
    assert answer.status_code == 200
    assert "dog" in answer.json()["__verbose"]["prompt"]


def test_progress_and_choices_come_through_the_proxy(single: RouterProcess) -> None:
    body = {"messages": CHAT, "max_tokens": 2, "stream": True, "n": 2, "return_progress": True,
            "cache_prompt": False}  # fmt: skip
    with single.client.stream("POST", "/v1/chat/completions", json=body) as response:
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    events = [json.loads(line[6:]) for line in lines[:-1]]
    progress: dict[int, list[int]] = {0: [], 1: []}
    finished = set()
    for event in events:
        choice = event["choices"][0]
        if "prompt_progress" in event:
            progress[choice["index"]].append(event["prompt_progress"]["processed"])
        if choice["finish_reason"]:
            finished.add(choice["index"])
    assert finished == {0, 1}
    for reports in progress.values():  # each choice reads the prompt batch by batch
        assert len(reports) >= 3
        assert reports == sorted(reports)
