"""Resumable streams through the router (docs/protocol.md §5), including the load-time cases.

To hold a model "loading" for as long as a test needs, without timing: with --models-max 1,
alpha is kept busy by an endless stream, so a request for beta waits in the queue until the
test lets alpha go.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.support.chat_streams import long_answer, stream_body, wait_queued
from tests.support.router_process import RouterProcess, running_router


@pytest.fixture
def one_slot(models_dir: Path) -> Iterator[RouterProcess]:
    args = ["--models-dir", str(models_dir), "--models-max", "1", "--ctx-size", "32768"]
    with running_router(args) as router:
        yield router


def test_replay_lookup_and_stop_through_the_router(router: RouterProcess) -> None:
    conv = "chat-1::alpha"
    headers = {"X-Conversation-Id": conv}
    with router.client.stream(
        "POST", "/v1/chat/completions", json=stream_body("alpha", 20), headers=headers
    ) as response:
        received = b"".join(response.iter_raw())
    replay = router.client.get("/v1/stream", params={"conv_id": conv, "from": 0})
    assert replay.content == received
    found = router.client.post("/v1/streams/lookup", json={"conversation_ids": [conv, "x"]})
    assert [item["conversation_id"] for item in found.json()] == [conv]
    assert found.json()[0]["is_done"] is True
    assert router.client.delete("/v1/stream", params={"conv_id": conv}).status_code == 204
    assert router.client.get("/v1/stream", params={"conv_id": conv}).status_code == 404


def test_unknown_and_malformed_stream_requests(router: RouterProcess) -> None:
    assert router.client.get("/v1/stream", params={"conv_id": "nope"}).status_code == 404
    assert router.client.get("/v1/stream").status_code == 400
    assert router.client.delete("/v1/stream").status_code == 400
    assert router.client.delete("/v1/stream", params={"conv_id": "nope"}).status_code == 204
    bad = router.client.post("/v1/streams/lookup", content=b"{nope")
    assert bad.status_code == 400
    assert router.client.post("/v1/streams/lookup", json={"conversation_ids": []}).json() == []


def test_replay_during_a_load_is_503_and_a_stop_cancels_the_parked_request(
    one_slot: RouterProcess,
) -> None:
    router = one_slot
    conv = "chat-2::beta"
    outcome: dict[str, httpx.Response] = {}
    with long_answer(router, "alpha"):

        def post() -> None:
            outcome["post"] = router.client.post(
                "/v1/chat/completions",
                json=stream_body("beta", 5),
                headers={"X-Conversation-Id": conv},
            )

        poster = threading.Thread(target=post)
        poster.start()
        wait_queued(router)
        waiting = router.client.get("/v1/stream", params={"conv_id": conv})
        assert waiting.status_code == 503
        assert waiting.json()["error"]["type"] == "unavailable_error"
        assert router.client.delete("/v1/stream", params={"conv_id": conv}).status_code == 204
    poster.join(timeout=60)  # alpha is idle now: beta loads and the parked request resumes
    assert outcome["post"].status_code == 400
    assert "cancelled" in outcome["post"].json()["error"]["message"]
    assert router.client.get("/v1/stream", params={"conv_id": conv}).status_code == 404


def _raw_post(url: str, body: dict[str, Any], headers: dict[str, str]) -> socket.socket:
    """A client that can vanish mid-request without saying goodbye."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80))
    payload = json.dumps(body).encode()
    head = [
        "POST /v1/chat/completions HTTP/1.1",
        f"Host: {parts.netloc}",
        "Content-Type: application/json",
        f"Content-Length: {len(payload)}",
        *(f"{key}: {value}" for key, value in headers.items()),
    ]
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
    return sock


def test_session_survives_a_client_that_vanished_during_the_load(one_slot: RouterProcess) -> None:
    router = one_slot
    conv = "chat-3::beta"
    with long_answer(router, "alpha"):
        sock = _raw_post(router.url, stream_body("beta", 8), {"X-Conversation-Id": conv})
        wait_queued(router)
        sock.close()  # the browser reloaded while beta was waiting for its slot
    # alpha went idle when its stream closed: beta loads, and the POST still reaches it.
    while not router.client.post("/v1/streams/lookup", json={"conversation_ids": [conv]}).json():
        pass
    replay = router.client.get("/v1/stream", params={"conv_id": conv, "from": 0})
    assert replay.status_code == 200
    assert replay.content.endswith(b"data: [DONE]\n\n")
    assert replay.content.count(b'"finish_reason":"length"') == 1


def test_unloading_the_owner_forgets_its_conversations(router: RouterProcess) -> None:
    conv = "chat-4"
    with router.client.stream(
        "POST",
        "/v1/chat/completions",
        json=stream_body("alpha", 3),
        headers={"X-Conversation-Id": conv},
    ) as response:
        b"".join(response.iter_raw())
    assert router.client.get("/v1/stream", params={"conv_id": conv}).status_code == 200
    assert router.client.post("/models/unload", json={"model": "alpha"}).status_code == 200
    router.wait_for_log("worker exited", model="alpha")
    gone = router.client.get("/v1/stream", params={"conv_id": conv})
    assert gone.status_code == 404
    assert gone.json()["error"]["message"] == "Stream not found: model 'alpha' stopped"
    assert router.models()["alpha"]["status"]["value"] == "unloaded"  # a replay loads nothing
