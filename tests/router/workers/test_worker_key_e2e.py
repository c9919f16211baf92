"""Only the router may call its workers (docs/protocol.md §8, docs/security.md, local users).

A worker listens on a loopback port that any local process can find (here: the router's log;
for an attacker, ``ss -ltn``). Called there directly, as another local user would, every route
answers 401, the admin-only ones above all; everything through the router keeps working:
chats, streams, resumable streams, slot actions, spares and restarted workers.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from corral.children.worker_key import WORKER_KEY_ENV
from tests.support.chat_streams import stream_body
from tests.support.router_process import RouterProcess, running_router

CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
REFUSED = {"code": 401, "message": "Invalid API Key", "type": "authentication_error"}
# What another local process would try on a worker's port: the admin-only slot and LoRA actions,
# a chat that skips the router's keys and limits, other callers' prompts in /slots.
ATTACKS: list[tuple[str, str, Any]] = [
    ("POST", "/slots/0?action=save", {"filename": "stolen.bin"}),
    ("POST", "/slots/0?action=restore", {"filename": "stolen.bin"}),
    ("POST", "/lora-adapters", []),
    ("POST", "/v1/chat/completions", CHAT),
    ("POST", "/completion", {"prompt": "hi", "n_predict": 1}),
    ("GET", "/slots", None),
    ("GET", "/props", None),
    ("GET", "/metrics", None),
    ("GET", "/health", None),
    ("OPTIONS", "/v1/chat/completions", None),
    ("GET", "/no/such/route", None),
]


def _worker_port(router: RouterProcess, model: str, besides: Collection[int] = ()) -> int:
    """The port the model's worker reported listening on (a port in ``besides`` is an older one)."""
    record = router.wait_for_record(
        lambda r: (
            r.get("event") == "listening"
            and r.get("model") == model
            and r.get("port") not in besides
        ),
        timeout=60,
    )
    return int(record["port"])


def _worker(router: RouterProcess, model: str) -> psutil.Process:
    """The model's worker process, started by the router for it (not a spare)."""
    for child in psutil.Process(router.process.pid).children():
        argv = child.cmdline()
        if "--alias" in argv and argv[argv.index("--alias") + 1] == model:
            return child
    raise AssertionError(f"no worker for {model}")


def _assert_refused(port: int, headers: dict[str, str] | None = None) -> None:
    for method, path, body in ATTACKS:
        answer = httpx.request(
            method,
            f"http://127.0.0.1:{port}{path}",
            content=None if body is None else json.dumps(body),
            headers={"Content-Type": "application/json", **(headers or {})},
            timeout=60,
        )
        assert answer.status_code == 401, (method, path, answer.text)
        assert answer.json()["error"] == REFUSED


def _chat(router: RouterProcess, model: str) -> None:
    reply = router.client.post("/v1/chat/completions", json={"model": model, **CHAT})
    assert reply.status_code == 200, reply.text


def _stream(router: RouterProcess, model: str, headers: dict[str, str] | None = None) -> bytes:
    with router.client.stream(
        "POST", "/v1/chat/completions", json=stream_body(model, 8), headers=headers or {}
    ) as response:
        assert response.status_code == 200
        received = b"".join(response.iter_raw())
    assert received.rstrip().endswith(b"data: [DONE]")
    return received


@pytest.fixture
def keyed_router(models_dir: Path, tmp_path: Path) -> Iterator[RouterProcess]:
    """Slot files go to ``tmp_path``, empty at first."""
    args = ["--models-dir", str(models_dir), "--ctx-size", "512", "--slot-save-path"]
    with running_router([*args, str(tmp_path), "--metrics"]) as router:
        yield router


def test_a_local_process_on_a_workers_port_is_refused_everywhere(
    keyed_router: RouterProcess, tmp_path: Path
) -> None:
    router = keyed_router
    _chat(router, "alpha")
    port = _worker_port(router, "alpha")
    _assert_refused(port)
    _assert_refused(port, {"X-Corral-Worker-Key": "guessed"})
    _assert_refused(port, {"Authorization": "Bearer guessed"})
    assert list(tmp_path.iterdir()) == []  # the refused save wrote nothing
    # Through the router, all of it still works (no router key: every caller is admin).
    _stream(router, "alpha")
    conv = {"X-Conversation-Id": "local-users-1::alpha"}
    received = _stream(router, "alpha", conv)
    replay = router.client.get("/v1/stream", params={"conv_id": "local-users-1::alpha"})
    assert replay.content == received
    saved = router.client.post("/slots/0?action=save&model=alpha", json={"filename": "mine.bin"})
    assert saved.status_code == 200, saved.text
    assert (tmp_path / "mine.bin").is_file()
    assert router.client.get("/slots", params={"model": "alpha"}).status_code == 200
    metrics = router.client.get("/metrics", params={"model": "alpha"})
    assert metrics.status_code == 200
    assert "llamacpp:" in metrics.text


def test_the_key_is_the_routers_alone_and_changes_with_each_start(
    keyed_router: RouterProcess,
) -> None:
    router = keyed_router
    _chat(router, "alpha")
    port = _worker_port(router, "alpha")
    worker = _worker(router, "alpha")
    # Readable by the same user only (/proc/PID/environ); never on the command line.
    key = worker.environ()[WORKER_KEY_ENV]
    assert key not in " ".join(worker.cmdline())
    health = httpx.get(f"http://127.0.0.1:{port}/health", headers={"X-Corral-Worker-Key": key})
    assert health.status_code == 200  # the key is what the worker asks for, nothing else
    props = router.client.get("/props", params={"model": "alpha"})
    assert props.status_code == 200
    for seen in (props.text, router.client.get("/models").text, router.log_text()):
        assert key not in seen
    # A worker the router starts again (here after a crash) has a new key: the old one is dead.
    worker.kill()
    worker.wait(timeout=30)
    router.wait_for_log("worker exited", model="alpha")
    _chat(router, "alpha")
    again = _worker_port(router, "alpha", besides={port})
    _assert_refused(again, {"X-Corral-Worker-Key": key})
    _stream(router, "alpha")


def test_a_worker_handed_over_from_a_spare_answers_only_the_router(models_dir: Path) -> None:
    args = ["--models-dir", str(models_dir), "--ctx-size", "512", "--models-max", "1"]
    with running_router(args, {"CORRAL_MODELS_SPARE": "1"}) as router:
        spare = router.wait_for_log("spare worker ready", timeout=60)["pid"]
        _chat(router, "alpha")
        assert router.wait_for_log("handing a model to a spare worker")["pid"] == spare
        first = _worker_port(router, "alpha")
        _assert_refused(first)
        _stream(router, "alpha")
        # beta evicts alpha, whose worker is released as a spare and may take beta: either way
        # the worker serving beta answers the router only.
        _chat(router, "beta")
        second = _worker_port(router, "beta")
        _assert_refused(second)
        _stream(router, "beta", {"X-Conversation-Id": "local-users-2::beta"})
        replay = router.client.get("/v1/stream", params={"conv_id": "local-users-2::beta"})
        assert replay.status_code == 200
        assert replay.content.rstrip().endswith(b"data: [DONE]")
