"""Ollama's API over a peer's models: two real routers on loopback, ``near`` peering ``far``
(docs/scaling.md). ``near`` asks ``far`` on its OpenAI-compatible routes and translates the
answers itself, as for its own workers, so a llama-server peer would serve as well."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import ollama
import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.router_process import RouterProcess, running_router

GREEDY: dict[str, Any] = {"temperature": 0, "num_predict": 6}
HI = [{"role": "user", "content": "hello there"}]


@pytest.fixture(scope="module")
def far(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    directory = tmp_path_factory.mktemp("far-models")
    write_tiny_gguf(directory / "beta.gguf", name="beta", seed=3)
    with running_router(["--models-dir", str(directory), "--ctx-size", "512"]) as router:
        yield router


@pytest.fixture(scope="module")
def near(far: RouterProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    directory = tmp_path_factory.mktemp("near-models")
    write_tiny_gguf(directory / "alpha.gguf", name="alpha")
    preset = directory / "models.ini"
    preset.write_text(f"[peer far]\nurl = {far.url}\nrefresh = 0\n")
    args = ["--models-dir", str(directory), "--models-preset", str(preset), "--ctx-size", "512"]
    with running_router(args) as router:
        router.wait_for_log("peer listed", peer="far")
        yield router


@pytest.fixture(scope="module")
def client(near: RouterProcess) -> Iterator[ollama.Client]:
    with ollama.Client(host=near.url, timeout=120) as official:
        yield official


@pytest.fixture(scope="module")
def far_client(far: RouterProcess) -> Iterator[ollama.Client]:
    with ollama.Client(host=far.url, timeout=120) as official:
        yield official


def test_a_peers_models_are_listed_as_remote_models(
    client: ollama.Client, near: RouterProcess, far: RouterProcess
) -> None:
    models = {model.model: model for model in client.list().models}
    assert set(models) == {"alpha:latest", "beta:latest"}
    assert models["alpha:latest"].size  # a local model has its file's size
    assert models["beta:latest"].size is None  # only the peer knows its model's
    # Ollama's fields for a remote model, which the client does not keep.
    listed = httpx.get(f"{near.url}/api/tags").json()["models"]
    (remote,) = [model for model in listed if model["model"] == "beta:latest"]
    assert remote["remote_model"] == "beta"
    assert remote["remote_host"].rstrip("/") == far.url.rstrip("/")


def test_a_peers_model_chats_through_the_same_translation(
    client: ollama.Client, far_client: ollama.Client
) -> None:
    there = far_client.chat(model="beta", messages=HI, options=GREEDY)
    whole = client.chat(model="beta:latest", messages=HI, options=GREEDY)
    assert whole.done
    assert (whole.done_reason, whole.eval_count) == ("length", 6)
    assert whole.message.content == there.message.content
    parts = list(client.chat(model="beta", messages=HI, options=GREEDY, stream=True))
    assert len(parts) > 2
    assert "".join(part.message.content or "" for part in parts) == whole.message.content
    assert (parts[-1].done, parts[-1].eval_count) == (True, 6)


def test_a_peers_model_generates_and_embeds(
    client: ollama.Client, far_client: ollama.Client
) -> None:
    there = far_client.generate(model="beta", prompt="hi", options=GREEDY)
    generated = client.generate(model="beta", prompt="hi", options=GREEDY)
    assert generated.response == there.response
    streamed = list(client.generate(model="beta", prompt="hi", options=GREEDY, stream=True))
    assert "".join(part.response or "" for part in streamed) == there.response
    assert client.generate(model="beta", prompt="").done_reason == "load"
    embedded = client.embed(model="beta", input="hello")
    assert embedded.embeddings == far_client.embed(model="beta", input="hello").embeddings


def test_a_name_nobody_serves_is_ollamas_404(client: ollama.Client) -> None:
    with pytest.raises(ollama.ResponseError) as caught:
        client.chat(model="gamma", messages=HI)
    assert caught.value.status_code == 404
    assert caught.value.error == (
        "model 'gamma' not found; models here: 'alpha'; a hub model is fetched with "
        "`corral pull owner/repo[:quant]` (or POST /models)"
    )
