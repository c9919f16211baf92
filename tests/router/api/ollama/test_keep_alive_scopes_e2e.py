"""How long a model stays loaded is management (docs/security.md, "Key holders (scopes)"): an
inference key's ``keep_alive`` neither unloads (0) nor pins (-1) a model, and its empty-prompt
load or unload is a 403, while the admin's still do; the official ``ollama`` client chats as
an inference key all the same (it sends ``keep_alive`` when asked to)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import ollama
import pytest

from tests.support.keyed_router import bearer, keyed_router
from tests.support.router_process import RouterProcess

ADMIN, INFERENCE = "keep-alive-admin", "keep-alive-inference"
HI = [{"role": "user", "content": "hi"}]
TTL = 3600  # alpha's own lifetime once idle, as its admin set it
FOREVER = timedelta(days=365 * 100)  # far beyond any ttl: Ollama's "pinned"


@pytest.fixture(scope="module")
def team(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    home = tmp_path_factory.mktemp("keep-alive-team")
    (home / "models.ini").write_text(f"[alpha]\nttl = {TTL}\n")
    keys = [f"{ADMIN} admin", f"{INFERENCE} inference"]
    preset = ("--models-preset", str(home / "models.ini"))
    with keyed_router(models_dir, home, keys, *preset, "--ctx-size", "512", admin=ADMIN) as router:
        yield router  # its own client reads /api/ps and /models as the admin


def _client(router: RouterProcess, key: str) -> ollama.Client:
    return ollama.Client(host=router.url, timeout=120, headers=bearer(key))


def _running(router: RouterProcess) -> dict[str, Any]:
    """``/api/ps`` by name: the models loaded and not stopping, with when each unloads."""
    return {model["name"]: model for model in router.client.get("/api/ps").json()["models"]}


def _expires_in(router: RouterProcess, name: str) -> timedelta:
    until = datetime.fromisoformat(_running(router)[name]["expires_at"].replace("Z", "+00:00"))
    return until - datetime.now(UTC)


def _until_unloaded(router: RouterProcess, name: str) -> None:
    deadline = time.monotonic() + 60
    while name in _running(router):
        assert time.monotonic() < deadline, f"{name} is still loaded"
        time.sleep(0.05)


@pytest.fixture
def loaded(team: RouterProcess) -> Iterator[ollama.Client]:
    """alpha loaded, with no keep-alive but its ttl; the inference key's client."""
    with _client(team, ADMIN) as admin:
        admin.chat(model="alpha", messages=HI, options={"num_predict": 1}, keep_alive=TTL)
    assert timedelta(minutes=50) < _expires_in(team, "alpha:latest") <= timedelta(seconds=TTL)
    with _client(team, INFERENCE) as inference:
        yield inference


def test_an_inference_keys_keep_alive_0_does_not_unload(
    team: RouterProcess, loaded: ollama.Client
) -> None:
    answer = loaded.chat(model="alpha", messages=HI, options={"num_predict": 2}, keep_alive=0)
    assert answer.done
    assert answer.done_reason in ("stop", "length")
    # The ttl still rules: an applied 0 would have made alpha due now, and unloaded it.
    assert _expires_in(team, "alpha:latest") > timedelta(minutes=50)
    assert team.models()["alpha"]["status"]["value"] == "loaded"


def test_an_inference_keys_keep_alive_minus_1_does_not_pin(
    team: RouterProcess, loaded: ollama.Client
) -> None:
    answer = loaded.generate(model="alpha", prompt="hi", options={"num_predict": 2}, keep_alive=-1)
    assert answer.done
    assert _expires_in(team, "alpha:latest") <= timedelta(seconds=TTL)


def test_an_inference_keys_empty_prompt_may_neither_unload_nor_load(
    team: RouterProcess, loaded: ollama.Client
) -> None:
    for ask in (
        lambda: loaded.generate(model="alpha", prompt="", keep_alive=0),
        lambda: loaded.chat(model="alpha", messages=[], keep_alive="0s"),
        lambda: loaded.generate(model="beta", prompt=""),
        lambda: loaded.embed(model="beta", input=[]),
    ):
        with pytest.raises(ollama.ResponseError) as refused:
            ask()
        assert refused.value.status_code == 403
        assert refused.value.error == (
            "this key may not load or unload models (it is an inference key)"
        )
    assert "alpha:latest" in _running(team)
    assert "beta:latest" not in _running(team)


def test_the_official_client_chats_as_an_inference_key(
    team: RouterProcess, loaded: ollama.Client
) -> None:
    chat = loaded.chat(model="alpha", messages=HI, options={"num_predict": 3}, keep_alive="5m")
    assert chat.done
    assert chat.message.role == "assistant"
    streamed = list(
        loaded.chat(model="alpha", messages=HI, options={"num_predict": 3}, stream=True)
    )
    assert streamed[-1].done
    # A malformed keep_alive is still the request's error, whoever sends it.
    with pytest.raises(ollama.ResponseError) as bad:
        loaded.chat(model="alpha", messages=HI, keep_alive="soon")
    assert bad.value.status_code == 400


def test_the_admins_keep_alive_still_pins_and_unloads(team: RouterProcess) -> None:
    with _client(team, ADMIN) as admin:
        assert admin.generate(model="alpha", prompt="", keep_alive=-1).done_reason == "load"
        assert _expires_in(team, "alpha:latest") > FOREVER
        admin.chat(model="alpha", messages=HI, options={"num_predict": 2}, keep_alive=0)
        _until_unloaded(team, "alpha:latest")
        assert admin.generate(model="beta", prompt="").done_reason == "load"
        assert admin.generate(model="beta", prompt="", keep_alive=0).done_reason == "unload"
        _until_unloaded(team, "beta:latest")
