"""Conversation ids (docs/security.md, "Key holders"): a client's is at most 256 bytes, and a
peer is told an opaque one, never ``key_id/conversation``: a real keyed router relaying to a
fake peer on loopback (tests/support/fakes/fake_peer.py) that keeps every request's headers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fakes.fake_peer import FakePeer, running_fake_peer
from tests.support.keyed_router import bearer, keyed_router
from tests.support.router_process import RouterProcess

KEY_A, KEY_B = "conv-ids-key-a", "conv-ids-key-b"
CHAT = {"model": "m0", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture(scope="module")
def fake() -> Iterator[FakePeer]:
    with running_fake_peer(["m0"]) as peer:
        yield peer


@pytest.fixture(scope="module")
def near(fake: FakePeer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    folder = tmp_path_factory.mktemp("near")
    (folder / "models").mkdir()
    (folder / "models.ini").write_text(f"[peer fake]\nurl = {fake.url}\nrefresh = 0\n")
    keys = [f"{KEY_A} inference", f"{KEY_B} inference"]
    extra = ["--models-preset", str(folder / "models.ini")]
    with keyed_router(folder / "models", folder, keys, *extra) as router:
        router.wait_for_log("peer listed", peer="fake")
        yield router


def _told_the_peer(near: RouterProcess, fake: FakePeer, key: str, conversation: str) -> str:
    headers = {**bearer(key), "X-Conversation-Id": conversation}
    answer = near.client.post("/v1/chat/completions", json=CHAT, headers=headers)
    assert answer.status_code == 200, answer.text
    return fake.requests[-1][2]["x-conversation-id"]


def test_a_peer_is_told_an_opaque_id_apart_for_each_key(
    near: RouterProcess, fake: FakePeer
) -> None:
    first = _told_the_peer(near, fake, KEY_A, "chat-1")
    assert "chat-1" not in first
    assert "/" not in first  # no key id before it
    assert _told_the_peer(near, fake, KEY_A, "chat-1") == first  # the same conversation's
    assert _told_the_peer(near, fake, KEY_B, "chat-1") != first  # another key's is another
    assert _told_the_peer(near, fake, KEY_A, "chat-2") != first


def test_a_conversation_id_is_at_most_256_bytes(near: RouterProcess, fake: FakePeer) -> None:
    _told_the_peer(near, fake, KEY_A, "c" * 256)
    headers = {**bearer(KEY_A), "X-Conversation-Id": "c" * 257}
    refused = near.client.post("/v1/chat/completions", json=CHAT, headers=headers)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert "256 bytes" in error["message"]
