"""A resumable stream belongs to the key that started it (docs/security.md, "Key holders
(scopes)"): another key that knows or guesses its id can neither replay, stop, find nor replace
it; the same id from another key is another stream."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.chat_streams import stream_body
from tests.support.keyed_router import bearer, keyed_router
from tests.support.router_process import RouterProcess

ALICE, BOB = "streams-alice-key", "streams-bob-key"
CONV = "chat-42"  # a client-chosen id, as the docs' examples use


@pytest.fixture(scope="module")
def team(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    folder = tmp_path_factory.mktemp("stream-owners")
    keys = [f"{ALICE} inference", f"{BOB} inference"]
    with keyed_router(models_dir, folder, keys, "--ctx-size", "512") as router:
        yield router


def _as(key: str, **headers: str) -> dict[str, str]:
    return {**bearer(key), **headers}


def _session(router: RouterProcess, key: str, tokens: int) -> bytes:
    """A whole streamed answer of a session ``CONV`` started with ``key``."""
    with router.client.stream(
        "POST",
        "/v1/chat/completions",
        json=stream_body("alpha", tokens),
        headers=_as(key, **{"X-Conversation-Id": CONV}),
    ) as response:
        assert response.status_code == 200
        return b"".join(response.iter_raw())


def _replay(router: RouterProcess, key: str) -> httpx.Response:
    return router.client.get("/v1/stream", params={"conv_id": CONV, "from": 0}, headers=_as(key))


def _lookup(router: RouterProcess, key: str) -> list[dict[str, Any]]:
    found = router.client.post(
        "/v1/streams/lookup", json={"conversation_ids": [CONV]}, headers=_as(key)
    )
    assert found.status_code == 200
    answer: list[dict[str, Any]] = found.json()
    return answer


def test_another_key_cannot_reach_a_stream(team: RouterProcess) -> None:
    alices = _session(team, ALICE, 12)
    assert _replay(team, ALICE).content == alices
    # Bob knows the id: to him it is a stream that never was.
    replayed = _replay(team, BOB)
    assert replayed.status_code == 404
    assert replayed.json()["error"]["message"] == "Stream not found or expired"
    assert _lookup(team, BOB) == []
    stop = team.client.delete("/v1/stream", params={"conv_id": CONV}, headers=_as(BOB))
    assert stop.status_code == 204  # as for any id he never used: idempotent, and telling nothing
    # Alice's stream is still there, whole, and hers to find, by the id she gave.
    assert _replay(team, ALICE).content == alices
    [mine] = _lookup(team, ALICE)
    assert mine["conversation_id"] == CONV
    assert mine["is_done"] is True
    assert mine["total_bytes"] == len(alices)


def test_the_same_id_from_another_key_is_another_stream(team: RouterProcess) -> None:
    alices = _session(team, ALICE, 12)
    bobs = _session(team, BOB, 3)  # would replace (and cancel) Alice's if ids were shared
    assert bobs != alices
    assert _replay(team, ALICE).content == alices
    assert _replay(team, BOB).content == bobs
    # Each key stops its own only.
    assert team.client.delete("/v1/stream", params={"conv_id": CONV}, headers=_as(BOB)).is_success
    assert _replay(team, BOB).status_code == 404
    assert _replay(team, ALICE).content == alices
