"""A resumable session's generation goes on after its client leaves, and so does its count
(docs/security.md, "Key holders (scopes)"): a ``concurrency=1`` key that starts a session and
disconnects is refused a second request until the generation ends, and the model keeps its
lease meanwhile, so nothing evicts it mid-session. Replaying, finding and stopping one's own
sessions take no slot."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.chat_streams import CHAT, active_requests, stream_body, until
from tests.support.keyed_router import bearer, keyed_router
from tests.support.router_process import RouterProcess

ADMIN, ONE_AT_A_TIME = "sessions-admin-key", "sessions-one-at-a-time"


@pytest.fixture(scope="module")
def team(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    folder = tmp_path_factory.mktemp("session-limits")
    keys = [f"{ADMIN} admin", f"{ONE_AT_A_TIME} inference concurrency=1"]
    # 32k of context: room for an answer that runs as long as the test needs. The admin key
    # reads /metrics, for the lease.
    with keyed_router(models_dir, folder, keys, "--ctx-size", "32768", admin=ADMIN) as router:
        yield router


LIMITED = bearer(ONE_AT_A_TIME)


def _start_and_leave(router: RouterProcess, conv: str, tokens: int) -> None:
    """A session started by the limited key, whose client leaves after the first token."""
    headers = {**LIMITED, "X-Conversation-Id": conv}
    body = stream_body("alpha", tokens)
    with router.client.stream("POST", "/v1/chat/completions", json=body, headers=headers) as s:
        assert s.status_code == 200
        next(line for line in s.iter_lines() if '"content":"' in line)


def _session(router: RouterProcess, conv: str) -> dict[str, object]:
    found = router.client.post(
        "/v1/streams/lookup", json={"conversation_ids": [conv]}, headers=LIMITED
    )
    assert found.status_code == 200  # a lookup takes no slot
    [session] = found.json()
    assert isinstance(session, dict)
    return session


def _ask(router: RouterProcess) -> int:
    body = {"model": "alpha", "messages": CHAT, "max_tokens": 1}
    return router.client.post("/v1/chat/completions", json=body, headers=LIMITED).status_code


def _total_bytes(router: RouterProcess, conv: str) -> int:
    total = _session(router, conv)["total_bytes"]
    assert isinstance(total, int)
    return total


def test_a_detached_session_counts_until_it_is_stopped(team: RouterProcess) -> None:
    conv = "detached-stopped"
    _start_and_leave(team, conv, 30_000)
    # The client is gone; while the generation goes on (its session keeps growing), the key
    # has no slot left and the model stays leased.
    started = _total_bytes(team, conv)
    while _total_bytes(team, conv) < started + 100_000:
        assert _ask(team) == 429
        assert active_requests(team, "alpha") >= 1
    assert _session(team, conv)["is_done"] is False
    # Its key may still watch it (a replay follows the live bytes: the first are enough).
    params: dict[str, str | int] = {"conv_id": conv, "from": 0}
    with team.client.stream("GET", "/v1/stream", params=params, headers=LIMITED) as replay:
        assert replay.status_code == 200
        assert next(replay.iter_raw()).startswith(b"data: ")
    stop = team.client.delete("/v1/stream", params={"conv_id": conv}, headers=LIMITED)
    assert stop.status_code == 204
    until(lambda: _ask(team) == 200, "the stopped session to give its slot back")
    until(lambda: active_requests(team, "alpha") == 0, "the stopped session's lease to end")


def test_a_detached_session_counts_until_it_finishes(team: RouterProcess) -> None:
    conv = "detached-finished"
    _start_and_leave(team, conv, 64)
    until(lambda: _session(team, conv)["is_done"] is True, "the session to finish")
    until(lambda: _ask(team) == 200, "the finished session to give its slot back")
