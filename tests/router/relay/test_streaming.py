"""Streams relayed through the router: disconnects reach the worker."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.support.router_process import RouterProcess, running_router

# Far more tokens than the tiny model produces before the disconnect propagates (one token).
LONG = 30_000


@pytest.fixture
def roomy_router(models_dir: Path) -> Iterator[RouterProcess]:
    with running_router(["--models-dir", str(models_dir), "--ctx-size", "32768"]) as router:
        yield router


LONG_STREAM = {
    "model": "alpha",
    "messages": [{"role": "user", "content": "hi"}],
    "max_tokens": LONG,
    "stream": True,
    "ignore_eos": True,  # the random tiny model may sample its end token at any time
}


def test_client_disconnect_stops_the_generation(roomy_router: RouterProcess) -> None:
    with roomy_router.client.stream("POST", "/v1/chat/completions", json=LONG_STREAM) as stream:
        lines = stream.iter_lines()
        first = next(line for line in lines if line.startswith("data: "))
        assert '"chat.completion.chunk"' in first
    # The response is closed: the router must drop its upstream, and the worker must stop.
    cancelled = roomy_router.wait_for_log("generation cancelled", model="alpha")
    assert cancelled["tokens"] < LONG


def test_model_given_with_m_is_loaded_at_startup(models_dir: Path) -> None:
    with running_router(["-m", str(models_dir / "beta.gguf")]) as router:
        models = router.models()
        assert list(models) == ["beta"]
        # Loading starts at startup, before any request.
        assert models["beta"]["status"]["value"] in ("loading", "loaded")
        reply = router.client.post(
            "/v1/chat/completions",
            json={"model": "beta", "messages": [{"role": "user", "content": "x"}], "max_tokens": 2},
        )
        assert reply.status_code == 200


def test_worker_killed_mid_stream_ends_the_stream_with_an_error_event(
    roomy_router: RouterProcess,
) -> None:
    body = LONG_STREAM
    with roomy_router.client.stream("POST", "/v1/chat/completions", json=body) as stream:
        lines = stream.iter_lines()
        assert next(line for line in lines if line.startswith("data: "))
        worker = next(
            child
            for child in psutil.Process(roomy_router.process.pid).children()
            if "worker" in child.cmdline()
        )
        worker.kill()
        rest = [line for line in lines if line.startswith("data: ")]
    assert rest, "the stream ended without telling the client"
    error = json.loads(rest[-1].removeprefix("data: "))["error"]
    assert error["type"] == "server_error"
    assert "alpha" in error["message"]

    roomy_router.wait_for_log("worker exited", model="alpha")
    status = roomy_router.models()["alpha"]["status"]
    assert status["failed"] is True
    assert "SIGKILL" in status["error"]
    again = roomy_router.client.post(
        "/v1/chat/completions", json={**body, "stream": False, "max_tokens": 2}
    )
    assert again.status_code == 200
