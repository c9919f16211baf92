"""Stopping the worker's server (worker.host.http_server): an idle one without waiting, a busy one
after its answers. Real worker processes; the order of events, never their timing."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from corral.children.protocol import EXIT_COMMAND
from tests.support.worker_process import worker


def test_an_exit_command_during_a_stream_lets_it_finish(models_dir: Path) -> None:
    body = {
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 24,
        "ignore_eos": True,
        "stream": True,
    }
    with worker(models_dir / "alpha.gguf") as child:
        with httpx.stream("POST", f"{child.url}/v1/chat/completions", json=body) as reply:
            lines = reply.iter_lines()
            first = next(line for line in lines if line.startswith("data: "))
            child.send(EXIT_COMMAND + b"\n")  # the answer has begun: it is finished first
            rest = [line for line in lines if line.startswith("data: ")]
        events = [json.loads(line[6:]) for line in [first, *rest[:-1]]]
        assert rest[-1] == "data: [DONE]"
        assert events[-1]["choices"][0]["finish_reason"] == "length"
        assert sum(bool(e["choices"][0]["delta"].get("content")) for e in events) == 24
        assert child.process.wait(timeout=60) == 0


def test_an_idle_worker_with_a_keep_alive_connection_stops_and_closes_it(models_dir: Path) -> None:
    with worker(models_dir / "alpha.gguf") as child, httpx.Client(base_url=child.url) as client:
        assert client.get("/health").status_code == 200  # a keep-alive connection stays open
        assert child.stop() == 0
        try:
            client.get("/health")
        except httpx.TransportError:
            pass  # the connection and the listener are gone with the process
        else:
            raise AssertionError("the stopped worker still answered")
