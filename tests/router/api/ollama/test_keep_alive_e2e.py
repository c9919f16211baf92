"""``keep_alive`` through the ``ollama`` client: 0 unloads the model once it has answered, a
duration is how long it stays loaded idle, a negative value keeps it; a generate request with
an empty prompt loads (or, with 0, unloads) a model."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import ollama
import pytest

from tests.router.api.ollama.conftest import start_router
from tests.support.router_process import RouterProcess

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def router(ollama_models: Path) -> Iterator[RouterProcess]:
    yield from start_router(ollama_models)


@pytest.fixture
def client(router: RouterProcess) -> Iterator[ollama.Client]:
    with ollama.Client(host=router.url, timeout=120) as official:
        yield official


def _loaded(client: ollama.Client) -> set[str]:
    return {model.model or "" for model in client.ps().models}


def _until_unloaded(client: ollama.Client, name: str) -> None:
    deadline = time.monotonic() + 30
    while name in _loaded(client):
        assert time.monotonic() < deadline, f"{name} is still loaded"
        time.sleep(0.1)


def test_keep_alive_zero_unloads_after_the_answer(
    client: ollama.Client, router: RouterProcess
) -> None:
    answer = client.chat(model="alpha", messages=HI, options={"num_predict": 2}, keep_alive=0)
    assert answer.done
    _until_unloaded(client, "alpha:latest")
    # ps drops a model as its stop begins; its worker is gone a moment later.
    deadline = time.monotonic() + 30
    while router.models()["alpha"]["status"]["value"] != "unloaded":
        assert time.monotonic() < deadline, "alpha's worker did not stop"
        time.sleep(0.1)
    # A later request without keep_alive leaves the model loaded (no ttl here).
    client.chat(model="alpha", messages=HI, options={"num_predict": 2})
    time.sleep(1.0)  # two rounds of the ttl check, which would have unloaded it
    assert "alpha:latest" in _loaded(client)


def test_an_empty_prompt_loads_and_keep_alive_zero_unloads(client: ollama.Client) -> None:
    loaded = client.generate(model="alpha", prompt="", keep_alive=-1)
    assert (loaded.done, loaded.done_reason, loaded.response) == (True, "load", "")
    assert "alpha:latest" in _loaded(client)
    chat = client.chat(model="alpha", messages=[], keep_alive="0s")
    assert chat.done_reason == "unload"
    _until_unloaded(client, "alpha:latest")


def test_a_duration_is_the_idle_time_before_unloading(client: ollama.Client) -> None:
    assert client.generate(model="alpha", prompt="", keep_alive="1s").done_reason == "load"
    _until_unloaded(client, "alpha:latest")  # with no ttl of its own, only keep_alive does it


def test_a_bad_keep_alive_is_refused_before_any_load(client: ollama.Client) -> None:
    with pytest.raises(ollama.ResponseError) as caught:
        client.chat(model="alpha", messages=HI, keep_alive="soon")
    assert caught.value.status_code == 400
    assert "invalid duration" in caught.value.error
    assert _loaded(client) == set()
