"""A peer is another party (docs/security.md, Peers): a real router relaying to a fake peer on
loopback (tests/support/fakes/fake_peer.py) that lists too much, answers without end, and tries to
set cookies on the router's origin.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from router.relay.peers import LISTING_MAX_NAMES
from tests.support.fakes.fake_peer import (
    ENDLESS_BYTES,
    HOSTILE_HEADERS,
    KEPT_HEADERS,
    FakePeer,
    running_fake_peer,
)
from tests.support.router_process import RouterProcess, running_router

LISTED = 20_000
PROMPT = [{"role": "user", "content": "hi"}]
ENDLESS = ["endless-refusal", "endless-header-line", "endless-header-lines"]
# Relayed as it comes on the OpenAI routes (the client's own reading bounds it); translated
# whole for Ollama's.
ENDLESS_ANSWER = "endless-answer"
BAD = [*ENDLESS, ENDLESS_ANSWER]
# What a peer may be told: these, the relay's own framing and the peer's key (none here).
ALLOWED = {"accept", "content-type", "content-encoding", "user-agent", "x-conversation-id",
           "anthropic-version", "anthropic-beta", "host", "content-length"}  # fmt: skip


@pytest.fixture(scope="module")
def fake() -> Iterator[FakePeer]:
    with running_fake_peer([f"m{i}" for i in range(LISTED)]) as peer:
        yield peer


@pytest.fixture(scope="module")
def near(fake: FakePeer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    preset = tmp_path_factory.mktemp("near") / "models.ini"
    preset.write_text(
        f"[peer fake]\nurl = {fake.url}\nrefresh = 0\n\n"
        f"[peer bad]\nurl = {fake.url}\nrefresh = 0\nmodels = {', '.join(BAD)}\n\n"
        f"[peer huge]\nurl = {fake.url}/huge\nrefresh = 0\n"
    )
    with running_router(["--models-preset", str(preset)]) as router:
        router.wait_for_log("peer listed", peer="fake")
        router.wait_for_log("peer not listed", peer="huge")
        yield router


def test_a_long_listing_is_cut_to_the_cap_and_stays_correct(near: RouterProcess) -> None:
    truncated = near.wait_for_log("peer listing truncated", peer="fake")
    assert (truncated["listed"], truncated["kept"]) == (LISTED, LISTING_MAX_NAMES)
    models = near.models()
    served = {name for name, entry in models.items() if entry["status"].get("peer") == "fake"}
    assert served == {f"m{i}" for i in range(LISTING_MAX_NAMES)}  # the first ones, in order
    assert set(models) - served == set(BAD)  # bad's explicit list; huge lists nothing
    with openai.OpenAI(base_url=f"{near.url}/v1", api_key="unused", max_retries=0) as client:
        last = client.chat.completions.create(model=f"m{LISTING_MAX_NAMES - 1}", messages=PROMPT)  # type: ignore[arg-type]
        assert last.choices[0].message.content == "from the fake peer"
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model=f"m{LISTING_MAX_NAMES}", messages=PROMPT)  # type: ignore[arg-type]


def test_a_listing_over_its_byte_cap_is_refused_with_the_reason(near: RouterProcess) -> None:
    refused = near.wait_for_log("peer not listed", peer="huge")
    assert refused["error"] == "peer 'huge' answered more than 8192 KiB"


@pytest.mark.parametrize("mode", ENDLESS)
def test_an_endless_answer_is_cut_with_a_clean_502(
    near: RouterProcess, fake: FakePeer, mode: str
) -> None:
    """A 401 whose reason never ends, a head that never ends: the router stops reading at its
    bound and closes, so the peer could write only that and the sockets' buffers."""
    answer = near.client.post("/v1/chat/completions", json={"model": mode, "messages": PROMPT})
    assert answer.status_code == 502
    error = answer.json()["error"]
    assert error["message"].startswith("peer 'bad' ")
    assert fake.wait_sent(mode) < ENDLESS_BYTES // 4
    assert near.client.get("/health").status_code == 200
    ordinary = near.client.post("/v1/chat/completions", json={"model": "m1", "messages": PROMPT})
    assert ordinary.status_code == 200


def test_a_peer_never_gets_the_clients_cookies_or_credentials(
    near: RouterProcess, fake: FakePeer
) -> None:
    secrets = {
        "Cookie": "session=the-users-own",
        "Authorization": "Bearer the-clients-key",
        "Proxy-Authorization": "Basic cHJveHk6c2VjcmV0",
        "X-Forwarded-For": "10.1.2.3",
        "X-Forwarded-Host": "intranet.example",
        "X-Real-Ip": "10.1.2.3",
        "X-Api-Key": "another-key",
    }
    before = len(fake.requests)
    body = {"model": "m2", "messages": PROMPT}
    answer = near.client.post("/v1/chat/completions", json=body, headers=secrets)
    assert answer.status_code == 200
    method, path, headers = fake.requests[before]
    assert (method, path) == ("POST", "/v1/chat/completions")
    assert set(headers) <= ALLOWED, set(headers) - ALLOWED
    assert headers["content-type"] == "application/json"
    for value in secrets.values():
        assert value not in headers.values()


def test_a_peer_cannot_set_cookies_or_other_headers_on_the_routers_origin(
    near: RouterProcess,
) -> None:
    answer = near.client.post("/v1/chat/completions", json={"model": "m3", "messages": PROMPT})
    assert answer.status_code == 200
    for name in HOSTILE_HEADERS:
        assert name not in answer.headers, name
    for name, value in KEPT_HEADERS.items():  # what tells a client when to retry stays
        assert answer.headers[name] == value
    assert near.client.cookies == httpx.Cookies()


def test_the_ollama_api_relays_to_the_peer_without_its_headers(near: RouterProcess) -> None:
    answer = near.client.post(
        "/api/chat", json={"model": "m4", "messages": PROMPT, "stream": False}
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["message"]["content"] == "from the fake peer"
    assert "set-cookie" not in answer.headers


def test_an_endless_answer_translated_whole_is_cut_with_a_clean_error(
    near: RouterProcess, fake: FakePeer
) -> None:
    """Ollama's API reads a whole answer before translating it: from a peer whose answer never
    ends, the router stops at its bound (64 MiB) rather than holding all of it."""
    body = {"model": ENDLESS_ANSWER, "messages": PROMPT, "stream": False}
    answer = near.client.post("/api/chat", json=body)
    assert answer.status_code == 502, answer.text
    assert answer.json()["error"].startswith("peer 'bad' ")
    assert fake.wait_sent(ENDLESS_ANSWER) < ENDLESS_BYTES // 2
    assert near.client.get("/health").status_code == 200
