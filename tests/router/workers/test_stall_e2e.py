"""A worker that stops answering, end to end: a real router, a real worker, SIGSTOP.

The worker is frozen with SIGSTOP, as a hung process would be: it accepts nothing, answers no
liveness probe, sends no byte. With ``--stall-timeout 2`` the router must kill it, fail its
requests with a message that says it stalled, report it, and load it again on the next request.
No test waits for a time to pass: each waits for the router's state to change.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.support.router_process import RouterProcess, running_router

CHAT = {"model": "alpha", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
LONG_STREAM = {**CHAT, "max_tokens": 30_000, "stream": True, "ignore_eos": True}


@pytest.fixture
def router(models_dir: Path) -> Iterator[RouterProcess]:
    # --timeout bounds the test should the watchdog fail: the relay then gives up on its own,
    # with a message these tests do not accept.
    args = ["--models-dir", str(models_dir), "--ctx-size", "32768", "--stall-timeout", "2"]
    args += ["--timeout", "20"]
    with running_router(args) as process:
        yield process


def _worker(router: RouterProcess) -> psutil.Process:
    return next(
        child
        for child in psutil.Process(router.process.pid).children()
        if "worker" in child.cmdline()
    )


def _stalled_status(router: RouterProcess) -> dict[str, Any]:
    router.wait_for_log("worker exited", model="alpha")
    status: dict[str, Any] = router.models()["alpha"]["status"]
    assert status["value"] == "unloaded"
    assert status["failed"] is True
    assert status["reason"] == "stalled"
    assert "stalled: no progress for 2 s" in status["error"]
    return status


def _answers_again(router: RouterProcess, stopped_pid: int) -> None:
    again = router.client.post("/v1/chat/completions", json=CHAT)
    assert again.status_code == 200
    assert again.json()["choices"][0]["message"]["content"]
    assert _worker(router).pid != stopped_pid
    assert "failed" not in router.models()["alpha"]["status"]


def test_worker_stopped_mid_stream_is_killed_and_the_stream_says_it_stalled(
    router: RouterProcess,
) -> None:
    with router.client.stream("POST", "/v1/chat/completions", json=LONG_STREAM) as stream:
        lines = stream.iter_lines()
        assert next(line for line in lines if line.startswith("data: "))
        worker = _worker(router)
        os.kill(worker.pid, signal.SIGSTOP)  # the worker hangs: no byte, no probe answer
        rest = [line for line in lines if line.startswith("data: ")]
    assert rest, "the stream ended without telling the client"
    error = json.loads(rest[-1].removeprefix("data: "))["error"]
    assert error["code"] == 503
    assert error["message"] == "model 'alpha' stalled: no progress for 2 s"

    _stalled_status(router)
    _answers_again(router, worker.pid)


def test_request_to_a_stopped_worker_gets_503_saying_it_stalled(router: RouterProcess) -> None:
    assert router.client.post("/v1/chat/completions", json=CHAT).status_code == 200
    worker = _worker(router)
    os.kill(worker.pid, signal.SIGSTOP)

    response = router.client.post("/v1/chat/completions", json=CHAT)
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["type"] == "unavailable_error"
    assert error["message"] == "model 'alpha' stalled: no progress for 2 s"

    _stalled_status(router)
    _answers_again(router, worker.pid)
