"""The router's threads command (docs/protocol.md §1): the worker's context computes with the
count it was sent from its next step on, its ``/metrics`` says so, and a context made anew
(a wake from sleep, the embeddings context) gets it too."""

from __future__ import annotations

from pathlib import Path

import httpx

from corral.children.protocol import ThreadsCommand, encode_threads
from tests.support.thread_counts import threads_in, threads_once
from tests.support.worker_process import worker
from worker.engine.model import LoadedModel
from worker.engine.thread_count import ThreadCount, threads_now
from worker.host.llama_bindings import llama_cpp
from worker.settings.parse import parse_worker_args


def _threads(url: str) -> tuple[int, int]:
    return threads_in(httpx.get(f"{url}/metrics").text)


def _until(url: str, wanted: tuple[int, int]) -> tuple[int, int]:
    return threads_once(lambda: httpx.get(f"{url}/metrics").text, wanted)


def test_the_worker_computes_with_the_count_it_is_sent(models_dir: Path) -> None:
    with worker(models_dir / "alpha.gguf", "--metrics", "-t", "2", "-tb", "2") as child:
        assert _threads(child.url) == (2, 2)
        child.send(encode_threads(1, 1))
        assert _until(child.url, (1, 1)) == (1, 1)
        reply = httpx.post(
            f"{child.url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3},
            timeout=60,
        )
        assert reply.status_code == 200
        assert _threads(child.url) == (1, 1)
        child.send(encode_threads(3, 2))
        assert _until(child.url, (3, 2)) == (3, 2)


def test_a_context_made_anew_gets_the_count_again(models_dir: Path) -> None:
    argv = ["-m", str(models_dir / "alpha.gguf"), "-c", "256", "-t", "2", "--no-kv-persist"]
    model = LoadedModel(parse_worker_args(argv), lambda value: None)
    try:
        count = ThreadCount()
        count.want(ThreadsCommand(1, 1))
        count.apply(model)
        assert threads_now(model) == (1, 1)
        model.sleep()
        # No context to read while asleep: what it had, so /metrics reads the same as before
        # (llama.cpp's test_sleep.py, test_server_sleep_read_only_endpoints).
        assert threads_now(model) == (1, 1)
        count.apply(model)  # nothing to set: it waits for the wake
        model.wake(lambda value: None)
        assert threads_now(model) == (2, 2)  # the flags' count, until the engine applies
        count.apply(model)
        assert threads_now(model) == (1, 1)
        embeddings = model.embedder()  # made with the flags' count, then given the share
        count.apply(model)
        assert llama_cpp.llama_n_threads(embeddings._ctx) == 1
    finally:
        model.close()
