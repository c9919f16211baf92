"""Two real routers on loopback, one peering the other (docs/scaling.md).

``near`` serves a local ``alpha`` and peers ``far`` (which serves ``alpha`` and ``beta`` behind
an API key) four ways: all of its models, one under a prefix, one with a wrong key, and a peer
that is not there at all.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.router_process import RouterProcess, running_router

FAR_KEY = "far-secret-key-6d1f"
WRONG_KEY = "wrong-secret-key-93ab"
PROMPT = [{"role": "user", "content": "hi"}]


def _client(router: RouterProcess, key: str = "unused") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{router.url}/v1", api_key=key, max_retries=0)


def _chat(router: RouterProcess, model: str, **extra: Any) -> Any:
    with _client(router) as client:
        return client.chat.completions.create(model=model, messages=PROMPT, **extra)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def far_models(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("far-models")
    for name in ("alpha.gguf", "beta.gguf"):
        shutil.copy(models_dir / name, directory / name)
    return directory


@pytest.fixture(scope="module")
def far(far_models: Path) -> Iterator[RouterProcess]:
    args = ["--models-dir", str(far_models), "--ctx-size", "512", "--api-key", FAR_KEY]
    with running_router(args) as router:
        yield router


@pytest.fixture(scope="module")
def refused_port() -> Iterator[int]:
    """A port that refuses connections: bound (so nobody else takes it) but not listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def _preset(path: Path, far: RouterProcess, dead_port: int, extra: str = "") -> Path:
    key_file = path.parent / "far.key"
    key_file.write_text(FAR_KEY + "\n")
    path.write_text(
        f"[peer far]\nurl = {far.url}\napi-key-file = far.key\nrefresh = 0\n\n"
        f"[peer far-prefixed]\nurl = {far.url}/\napi-key = {FAR_KEY}\nprefix = far/\n"
        "models = alpha\n\n"
        f"[peer far-wrong-key]\nurl = {far.url}\napi-key = {WRONG_KEY}\nprefix = wk/\n"
        "models = beta\n\n"
        f"[peer dead]\nurl = http://127.0.0.1:{dead_port}\nmodels = ghost\ntimeout = 5\n" + extra
    )
    return path


@pytest.fixture(scope="module")
def near(
    far: RouterProcess,
    models_dir: Path,
    refused_port: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RouterProcess]:
    directory = tmp_path_factory.mktemp("near")
    local = directory / "models"
    local.mkdir()
    shutil.copy(models_dir / "alpha.gguf", local / "alpha.gguf")
    preset = _preset(directory / "models.ini", far, refused_port)
    args = ["--models-dir", str(local), "--models-preset", str(preset), "--ctx-size", "512"]
    with running_router(args) as router:
        for peer in ("far", "far-prefixed"):
            router.wait_for_log("peer listed", peer=peer)
        for peer in ("far-wrong-key", "dead"):
            router.wait_for_log("peer not listed", peer=peer)
        yield router


def _listing(router: RouterProcess) -> dict[str, dict[str, Any]]:
    return router.models()


def _peer_metric(router: RouterProcess, name: str, peer: str) -> float:
    prefix = f'{name}{{peer="{peer}"'
    lines = router.client.get("/metrics").text.splitlines()
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines if line.startswith(prefix))


def test_the_peers_models_are_listed_as_remote_and_local_names_win(
    near: RouterProcess, far: RouterProcess
) -> None:
    models = _listing(near)
    assert models["alpha"]["status"]["value"] == "unloaded"  # the local alpha, not far's
    assert models["alpha"]["source"] == "models_dir"
    assert models["beta"]["status"] == {"value": "remote", "peer": "far", "url": far.url}
    assert models["far/alpha"]["status"]["peer"] == "far-prefixed"
    assert models["far/alpha"]["remote_id"] == "alpha"
    assert models["ghost"]["status"]["peer"] == "dead"
    assert models["ghost"]["status"]["error"].startswith("cannot connect to peer 'dead'")
    assert "401" in models["wk/beta"]["status"]["error"]
    assert "far/beta" not in models  # the prefixed peer serves only what its `models` lists


def test_chat_and_stream_through_the_peer_match_the_peer_itself(
    near: RouterProcess, far: RouterProcess
) -> None:
    ask: dict[str, Any] = {"model": "beta", "messages": PROMPT, "max_tokens": 8, "temperature": 0}
    with _client(near) as routed, _client(far, FAR_KEY) as direct:
        whole = routed.chat.completions.create(**ask).choices[0].message.content
        assert whole == direct.chat.completions.create(**ask).choices[0].message.content
        stream = routed.chat.completions.create(**ask, stream=True)
        pieces = [chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices]
    assert "".join(pieces) == whole
    assert _peer_metric(near, "corral_peer_requests_total", "far") >= 2


def test_a_prefixed_name_reaches_the_peers_model_under_its_own_name(near: RouterProcess) -> None:
    before = _peer_metric(near, "corral_peer_requests_total", "far-prefixed")
    answer = _chat(near, "far/alpha", max_tokens=4)
    assert answer.choices[0].message.content is not None
    assert _peer_metric(near, "corral_peer_requests_total", "far-prefixed") == before + 1


def test_a_dead_peer_answers_502_with_its_name_and_local_models_still_work(
    near: RouterProcess,
) -> None:
    with pytest.raises(openai.APIStatusError) as caught:
        _chat(near, "ghost")
    assert caught.value.status_code == 502
    message = caught.value.response.json()["error"]["message"]
    assert message.startswith("peer 'dead' is unreachable: cannot connect to peer 'dead'")
    assert _peer_metric(near, "corral_peer_errors_total", "dead") >= 1
    local = _chat(near, "alpha", max_tokens=4)
    assert local.choices[0].message.content is not None


def test_a_wrong_peer_key_is_a_502_with_the_reason_and_no_key_is_ever_shown(
    near: RouterProcess,
) -> None:
    with pytest.raises(openai.APIStatusError) as caught:
        _chat(near, "wk/beta")
    assert caught.value.status_code == 502
    message = caught.value.response.json()["error"]["message"]
    assert message.startswith("peer 'far-wrong-key' refused the request with 401")
    assert "api-key" in message
    shown = [
        near.client.get("/models").text,
        near.client.get("/metrics").text,
        caught.value.response.text,
        near.log_text(),
    ]
    for text in shown:
        assert FAR_KEY not in text
        assert WRONG_KEY not in text


def test_a_peers_model_is_not_loaded_or_unloaded_here(near: RouterProcess) -> None:
    for route in ("/models/load", "/models/unload"):
        answer = near.client.post(route, json={"model": "beta"})
        assert answer.status_code == 400
        assert answer.json()["error"]["message"] == "model 'beta' is served by peer 'far'"


def test_a_resumed_stream_replays_through_the_peer(near: RouterProcess) -> None:
    conversation = "peer-chat-1"
    body = {"model": "beta", "messages": PROMPT, "max_tokens": 12, "stream": True,
            "ignore_eos": True}  # fmt: skip
    headers = {"X-Conversation-Id": conversation}
    with near.client.stream("POST", "/v1/chat/completions", json=body, headers=headers) as response:
        assert response.status_code == 200
        received = b"".join(response.iter_raw())
    assert b"[DONE]" in received
    replay = near.client.get("/v1/stream", params={"conv_id": conversation, "from": 0})
    assert replay.status_code == 200
    assert replay.content == received
    found = near.client.post("/v1/streams/lookup", json={"conversation_ids": [conversation]})
    assert [item["conversation_id"] for item in found.json()] == [conversation]
    assert near.client.delete("/v1/stream", params={"conv_id": conversation}).status_code == 204
    assert near.client.get("/v1/stream", params={"conv_id": conversation}).status_code == 404


def test_a_stream_left_mid_way_resumes_through_the_peer(near: RouterProcess) -> None:
    """The client goes away after one token: the peer keeps generating for the conversation,
    and a replay through ``near`` gets the whole answer."""
    conversation = "peer-chat-2"
    body = {"model": "beta", "messages": PROMPT, "max_tokens": 24, "stream": True,
            "ignore_eos": True}  # fmt: skip
    headers = {"X-Conversation-Id": conversation}
    with near.client.stream("POST", "/v1/chat/completions", json=body, headers=headers) as response:
        first = next(line for line in response.iter_lines() if '"content":"' in line)
    replay = near.client.get("/v1/stream", params={"conv_id": conversation, "from": 0})
    assert replay.status_code == 200
    events = [line for line in replay.text.splitlines() if line.startswith("data: ")]
    assert first in events
    assert events[-1] == "data: [DONE]"  # generated to the end though nobody was listening
    assert sum('"content":"' in event for event in events) > 1


def test_reload_lists_what_the_peer_lists_now(
    near: RouterProcess, far: RouterProcess, far_models: Path
) -> None:
    write_tiny_gguf(far_models / "delta.gguf", name="delta", seed=3)
    assert "delta" not in _listing(near)
    far.client.get("/models", params={"reload": 1}, headers={"Authorization": f"Bearer {FAR_KEY}"})
    reloaded = near.client.get("/models", params={"reload": 1}).json()["data"]
    delta = next(entry for entry in reloaded if entry["id"] == "delta")
    assert delta["status"]["value"] == "remote"


def test_sighup_lists_the_peer_again(far: RouterProcess, far_models: Path, tmp_path: Path) -> None:
    preset = tmp_path / "models.ini"
    preset.write_text(f"[peer far]\nurl = {far.url}\napi-key = {FAR_KEY}\nrefresh = 0\n")
    with running_router(["--models-preset", str(preset)]) as near:
        near.wait_for_log("peer listed", peer="far")
        assert "epsilon" not in _listing(near)
        write_tiny_gguf(far_models / "epsilon.gguf", name="epsilon", seed=4)
        far.client.get(
            "/models", params={"reload": 1}, headers={"Authorization": f"Bearer {FAR_KEY}"}
        )
        near.process.send_signal(signal.SIGHUP)
        near.wait_for_log("models reloaded")
        assert _listing(near)["epsilon"]["status"]["peer"] == "far"


def test_the_peer_is_listed_again_every_refresh_seconds(
    far: RouterProcess, far_models: Path, tmp_path: Path
) -> None:
    preset = tmp_path / "models.ini"
    preset.write_text(f"[peer far]\nurl = {far.url}\napi-key = {FAR_KEY}\nrefresh = 0.2\n")
    with running_router(["--models-preset", str(preset)]) as near:
        first = near.wait_for_log("peer listed", peer="far")
        assert "zeta" not in first["models"]
        write_tiny_gguf(far_models / "zeta.gguf", name="zeta", seed=5)
        far.client.get(
            "/models", params={"reload": 1}, headers={"Authorization": f"Bearer {FAR_KEY}"}
        )
        near.wait_for_record(lambda r: r.get("event") == "peer listed" and "zeta" in r["models"])
        assert _listing(near)["zeta"]["status"]["value"] == "remote"


def test_prefer_peer_gives_a_clashing_name_to_the_peer(
    far: RouterProcess, models_dir: Path, refused_port: int, tmp_path: Path
) -> None:
    extra = (
        f"\n[peer far-first]\nurl = {far.url}\napi-key = {FAR_KEY}\nmodels = alpha\nprefer = peer\n"
    )
    preset = _preset(tmp_path / "models.ini", far, refused_port, extra)
    args = ["--models-dir", str(models_dir), "--models-preset", str(preset)]
    with running_router(args) as near:
        near.wait_for_log("peer listed", peer="far")
        alpha = _listing(near)["alpha"]
        assert alpha["status"]["value"] == "remote"
        assert alpha["status"]["peer"] == "far-first"
        answer = _chat(near, "alpha", max_tokens=4)
        assert answer.choices[0].message.content is not None
        assert _peer_metric(near, "corral_peer_requests_total", "far-first") == 1


def test_a_peer_stopped_mid_stream_ends_the_stream_with_an_error_naming_it(
    far_models: Path, tmp_path: Path
) -> None:
    args = ["--models-dir", str(far_models), "--ctx-size", "32768"]
    with running_router(args) as lost:
        preset = tmp_path / "models.ini"
        preset.write_text(f"[peer lost]\nurl = {lost.url}\nmodels = beta\n")
        with running_router(["--models-preset", str(preset)]) as near:
            body = {"model": "beta", "messages": PROMPT, "max_tokens": 30_000, "stream": True,
                    "ignore_eos": True}  # fmt: skip
            with near.client.stream("POST", "/v1/chat/completions", json=body) as response:
                lines = response.iter_lines()
                next(line for line in lines if '"content":"' in line)
                lost.process.kill()  # the whole peer, not only its worker
                rest = list(lines)
            events = [json.loads(line[6:]) for line in rest if line.startswith("data: {")]
            assert "error" in events[-1], rest[-3:]
            assert events[-1]["error"]["message"].startswith("peer 'lost' stopped while answering")
            after = near.client.post("/v1/chat/completions", json={**body, "stream": False})
            assert after.status_code == 502
            assert "peer 'lost' is unreachable" in after.json()["error"]["message"]


def test_an_unreachable_peer_does_not_delay_the_router(refused_port: int, tmp_path: Path) -> None:
    preset = tmp_path / "models.ini"
    preset.write_text(f"[peer dead]\nurl = http://127.0.0.1:{refused_port}\n")
    with running_router(["--models-preset", str(preset)]) as near:
        near.wait_for_log("peer not listed", peer="dead")
        assert near.client.get("/health").status_code == 200
        assert near.client.get("/models").json()["data"] == []
        missing = near.client.post("/v1/chat/completions", json={"model": "x", "messages": PROMPT})
        assert missing.status_code == 404
