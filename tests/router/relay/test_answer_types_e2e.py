"""Every relayed answer is shown on the router's own origin, the Web UI's (docs/security.md):
it keeps only the APIs' content types, with ``nosniff`` and a sandboxing CSP.

The attack is a peer (tests/support/fakes/fake_peer.py) that answers a web page with a script: a
link to ``/slots?model=page`` or ``/metrics?model=page``, or a cross-site form posting text/plain to
the chat route, would run it with the Web UI's stored key. Through a real router it comes back
as bytes to save. What the APIs answer (a worker's and a peer's JSON and SSE, a worker's
metrics, Ollama's NDJSON) keeps its type and its bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.fakes.fake_peer import PAGE, PAGE_MODEL, STREAM, FakePeer, running_fake_peer
from tests.support.router_process import RouterProcess, running_router

GUARDS = {
    "x-content-type-options": "nosniff",
    "content-security-policy": "sandbox; default-src 'none'",
}
PROMPT = [{"role": "user", "content": "hi"}]
ATTACKER = "https://attacker.example"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakePeer]:
    with running_fake_peer([PAGE_MODEL, "m1"]) as peer:
        yield peer


@pytest.fixture(scope="module")
def router(
    fake: FakePeer, models_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RouterProcess]:
    preset = tmp_path_factory.mktemp("types") / "models.ini"
    preset.write_text(f"[peer fake]\nurl = {fake.url}\nrefresh = 0\n")
    args = ["--models-preset", str(preset), "--models-dir", str(models_dir), "--metrics"]
    with running_router(args) as router:
        router.wait_for_log("peer listed", peer="fake")
        yield router


def _guarded(answer: httpx.Response, media: str) -> None:
    assert answer.headers["content-type"] == media
    for name, value in GUARDS.items():
        assert answer.headers.get_list(name) == [value], name


@pytest.mark.parametrize("path", ["/slots", "/metrics"])
def test_a_peers_page_through_a_link_is_bytes_to_save(router: RouterProcess, path: str) -> None:
    answer = router.client.get(path, params={"model": PAGE_MODEL})
    assert answer.status_code == 200
    assert answer.content == PAGE  # the bytes go through: only their type is taken away
    _guarded(answer, "application/octet-stream")


def test_a_peers_page_through_a_cross_site_form_is_bytes_to_save(router: RouterProcess) -> None:
    form = json.dumps({"model": PAGE_MODEL, "messages": PROMPT})
    headers = {"Origin": ATTACKER, "Content-Type": "text/plain"}
    answer = router.client.post("/v1/chat/completions", content=form, headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.content == PAGE
    _guarded(answer, "application/octet-stream")


def test_a_peers_json_and_sse_answers_keep_their_type_and_bytes(router: RouterProcess) -> None:
    whole = router.client.post("/v1/chat/completions", json={"model": "m1", "messages": PROMPT})
    assert whole.json()["choices"][0]["message"]["content"] == "from the fake peer"
    _guarded(whole, "application/json")
    body = {"model": "m1", "messages": PROMPT, "stream": True}
    stream = router.client.post("/v1/chat/completions", json=body)
    assert stream.content == STREAM
    _guarded(stream, "text/event-stream")


def test_a_workers_json_sse_and_metrics_keep_their_type(router: RouterProcess) -> None:
    chat = {"model": "alpha", "messages": PROMPT, "max_tokens": 2}
    whole = router.client.post("/v1/chat/completions", json=chat)
    assert whole.json()["object"] == "chat.completion"
    _guarded(whole, "application/json")
    stream = router.client.post("/v1/chat/completions", json={**chat, "stream": True})
    assert stream.text.endswith("data: [DONE]\n\n")
    _guarded(stream, "text/event-stream; charset=utf-8")
    metrics = router.client.get("/metrics", params={"model": "alpha"})
    assert "llamacpp:prompt_tokens_total" in metrics.text
    _guarded(metrics, "text/plain; version=0.0.4; charset=utf-8")
    # A translated answer's type is the router's own: Ollama's stream is NDJSON lines.
    ollama = router.client.post("/api/chat", json={**chat, "stream": True})
    assert json.loads(ollama.text.splitlines()[-1])["done"] is True
    _guarded(ollama, "application/x-ndjson")
