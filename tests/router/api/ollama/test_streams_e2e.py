"""Ollama's NDJSON streams go through the same relay as every other stream: a client that
leaves stops the generation, and a worker that dies mid-answer ends the stream with Ollama's
error line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.support.router_process import RouterProcess, running_router

LONG = 30_000  # far more tokens than are made before the disconnect reaches the worker
# Greedy: the tiny model's answer to this prompt never samples its end token early.
LONG_STREAM = {
    "model": "alpha",
    "messages": [{"role": "user", "content": "hi"}],
    "options": {"num_predict": LONG, "temperature": 0},
}


@pytest.fixture
def roomy_router(models_dir: Path) -> Iterator[RouterProcess]:
    with running_router(["--models-dir", str(models_dir), "--ctx-size", "32768"]) as router:
        yield router


def test_a_client_that_leaves_stops_the_generation(roomy_router: RouterProcess) -> None:
    with roomy_router.client.stream("POST", "/api/chat", json=LONG_STREAM) as stream:
        first = json.loads(next(stream.iter_lines()))
        assert first["done"] is False
    cancelled = roomy_router.wait_for_log("generation cancelled", model="alpha")
    assert cancelled["tokens"] < LONG


def test_a_worker_killed_mid_answer_ends_the_stream_with_an_error(
    roomy_router: RouterProcess,
) -> None:
    with roomy_router.client.stream("POST", "/api/chat", json=LONG_STREAM) as stream:
        lines = stream.iter_lines()
        assert json.loads(next(lines))["done"] is False
        worker = next(
            child
            for child in psutil.Process(roomy_router.process.pid).children()
            if "worker" in child.cmdline()
        )
        worker.kill()
        last = json.loads([line for line in lines if line][-1])
    assert list(last) == ["error"]
    assert "alpha" in last["error"]
