"""Resumable stream sessions in a real worker (docs/protocol.md §5)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.worker_process import WorkerProcess, worker

CHAT = [{"role": "user", "content": "hi"}]


def _body(max_tokens: int) -> dict[str, Any]:
    return {"messages": CHAT, "max_tokens": max_tokens, "stream": True, "ignore_eos": True}


def _session_post(url: str, conv: str, max_tokens: int) -> bytes:
    headers = {"X-Conversation-Id": conv}
    with httpx.stream(
        "POST", f"{url}/v1/chat/completions", json=_body(max_tokens), headers=headers, timeout=60
    ) as response:
        assert response.status_code == 200
        return b"".join(response.iter_raw())


def _lookup(url: str, *ids: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = httpx.post(
        f"{url}/v1/streams/lookup", json={"conversation_ids": list(ids)}
    ).json()
    return found


def _wait_done(url: str, conv: str) -> dict[str, Any]:
    """A detached generation ends on its own; wait for the session to say so."""
    deadline = time.monotonic() + 60
    while True:
        sessions = _lookup(url, conv)
        if sessions and sessions[0]["is_done"]:
            return sessions[0]
        assert time.monotonic() < deadline, "the session never completed"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def child(models_dir: Path) -> Iterator[WorkerProcess]:
    with worker(models_dir / "alpha.gguf", "--ctx-size", "4096") as process:
        yield process


def test_replay_of_a_finished_stream_is_byte_identical(child: WorkerProcess) -> None:
    received = _session_post(child.url, "conv-a", 20)
    assert received.endswith(b"data: [DONE]\n\n")
    replay = httpx.get(f"{child.url}/v1/stream", params={"conv_id": "conv-a", "from": 0})
    assert replay.status_code == 200
    assert replay.headers["content-type"].startswith("text/event-stream")
    assert replay.content == received
    tail = httpx.get(f"{child.url}/v1/stream", params={"conv_id": "conv-a", "from": 100})
    assert tail.content == received[100:]


def test_generation_outlives_its_client_and_replays_the_rest(child: WorkerProcess) -> None:
    headers = {"X-Conversation-Id": "conv-b"}
    got = b""
    with httpx.stream(
        "POST", f"{child.url}/v1/chat/completions", json=_body(300), headers=headers
    ) as response:
        for chunk in response.iter_raw():
            got += chunk
            if len(got) > 500:
                break  # the client goes away mid-generation
    session = _wait_done(child.url, "conv-b")
    rest = httpx.get(f"{child.url}/v1/stream", params={"conv_id": "conv-b", "from": len(got)})
    whole = httpx.get(f"{child.url}/v1/stream", params={"conv_id": "conv-b"}).content
    assert got + rest.content == whole
    assert session["total_bytes"] == len(whole)
    assert whole.endswith(b"data: [DONE]\n\n")
    assert whole.count(b'"finish_reason":"length"') == 1  # it ran to its budget


def test_delete_stops_the_generation_and_forgets_the_session(child: WorkerProcess) -> None:
    headers = {"X-Conversation-Id": "conv-c"}
    with httpx.stream(
        "POST", f"{child.url}/v1/chat/completions", json=_body(3000), headers=headers
    ) as response:
        lines = response.iter_lines()
        next(line for line in lines if '"content":"' in line)
        stop = httpx.delete(f"{child.url}/v1/stream", params={"conv_id": "conv-c"})
        assert stop.status_code == 204
        rest = list(lines)  # the original client's stream ends too
    assert not any("[DONE]" in line for line in rest)
    assert httpx.get(f"{child.url}/v1/stream", params={"conv_id": "conv-c"}).status_code == 404
    assert not any(slot["is_processing"] for slot in httpx.get(f"{child.url}/slots").json())
    again = httpx.delete(f"{child.url}/v1/stream", params={"conv_id": "conv-c"})
    assert again.status_code == 204  # idempotent


def test_lookup_answers_only_for_the_ids_asked(child: WorkerProcess) -> None:
    _session_post(child.url, "conv-d", 3)
    _session_post(child.url, "conv-e::some/model:Q8_0", 3)
    found = {item["conversation_id"] for item in _lookup(child.url, "conv-e", "nobody")}
    assert found == {"conv-e::some/model:Q8_0"}
    item = _lookup(child.url, "conv-d")[0]
    assert item["is_done"] is True
    assert item["completed_at"] >= item["started_at"] > 0
    assert _lookup(child.url) == []


def test_requests_that_leave_no_session(child: WorkerProcess) -> None:
    headers = {"X-Conversation-Id": "conv-f"}
    body = {"messages": CHAT, "max_tokens": 2}
    reply = httpx.post(f"{child.url}/v1/chat/completions", json=body, headers=headers)
    assert reply.status_code == 200
    bad = httpx.post(
        f"{child.url}/v1/chat/completions",
        json={**_body(3), "repeat_last_n": -1},
        headers={"X-Conversation-Id": "conv-g"},
    )
    assert bad.status_code == 400
    assert _lookup(child.url, "conv-f", "conv-g") == []


@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        ({}, 400, "Missing conversation id"),
        ({"conv_id": "nobody"}, 404, "not found"),
        ({"conv_id": "conv-a", "from": "x"}, 400, "Invalid 'from'"),
        ({"conv_id": "conv-a", "from": "-1"}, 400, "Invalid 'from'"),
    ],
)
def test_bad_replay_requests(
    child: WorkerProcess, params: dict[str, str], status: int, message: str
) -> None:
    _session_post(child.url, "conv-a", 3)
    response = httpx.get(f"{child.url}/v1/stream", params=params)
    assert response.status_code == status
    assert message in response.json()["error"]["message"]


def test_lookup_needs_a_json_body(child: WorkerProcess) -> None:
    response = httpx.post(f"{child.url}/v1/streams/lookup", content=b"{nope")
    assert response.status_code == 400


def test_bytes_past_the_cap_are_lost(models_dir: Path) -> None:
    # The default TTL (minutes) keeps the session while the test reads it, however slow the
    # machine; expiry has its own test below.
    env = {"CORRAL_STREAM_MAX_BYTES": "2000"}
    with worker(models_dir / "alpha.gguf", "--ctx-size", "4096", env=env) as small:
        received = _session_post(small.url, "conv-h", 100)
        assert len(received) > 2000
        lost = httpx.get(f"{small.url}/v1/stream", params={"conv_id": "conv-h", "from": 0})
        assert lost.status_code == 400
        assert "offset lost" in lost.json()["error"]["message"]
        kept = httpx.get(
            f"{small.url}/v1/stream", params={"conv_id": "conv-h", "from": len(received) - 1500}
        )
        assert kept.content == received[-1500:]


def test_finished_sessions_expire(models_dir: Path) -> None:
    env = {"CORRAL_STREAM_TTL_SECONDS": "0.5", "CORRAL_STREAM_GC_SECONDS": "0.1"}
    with worker(models_dir / "alpha.gguf", env=env) as short:
        _session_post(short.url, "conv-i", 3)
        deadline = time.monotonic() + 30
        while _lookup(short.url, "conv-i"):
            assert time.monotonic() < deadline, "the finished session never expired"
            time.sleep(0.05)
        gone = httpx.get(f"{short.url}/v1/stream", params={"conv_id": "conv-i"})
        assert gone.status_code == 404
