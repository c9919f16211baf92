"""``/api/version``, ``/api/tags``, ``/api/ps`` and ``/api/show`` through the ``ollama`` client:
what Corral's catalogue, the GGUF headers and the worker pool say, in Ollama's shapes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import ollama
import pytest

from tests.support.router_process import RouterProcess


def test_version_is_an_ollama_release_number(shared_router: RouterProcess) -> None:
    version = shared_router.client.get("/api/version").json()["version"]
    assert [part.isdigit() for part in version.split(".")] == [True, True, True]


def test_tags_lists_every_model_with_its_gguf_details(client: ollama.Client) -> None:
    models = {model.model: model for model in client.list().models}
    names = {"alpha:latest", "caller:latest", "coder:latest", "embedder:latest", "seer:latest"}
    names |= {"thinker:latest", "agent:latest", "dual:latest", "first:latest"}  # first: alpha's
    assert set(models) == names
    alpha = models["alpha:latest"]
    assert alpha.details is not None
    assert (alpha.details.format, alpha.details.family) == ("gguf", "llama")
    # The tiny model's F16 weights: general.file_type 1, and its tensors' elements counted.
    assert alpha.details.quantization_level == "F16"
    assert alpha.details.parameter_size is not None
    assert alpha.details.parameter_size.endswith("K")
    assert alpha.size is not None
    assert alpha.size > 100_000
    assert alpha.digest is not None
    assert len(alpha.digest) == 64
    assert alpha.modified_at is not None
    assert models["first:latest"].digest == alpha.digest
    # Two files, two digests.
    assert models["coder:latest"].digest != alpha.digest


def test_show_gives_the_template_header_and_capabilities(client: ollama.Client) -> None:
    shown = client.show("alpha")
    assert shown.template is not None
    assert "<|im_start|>" in shown.template
    assert shown.modelinfo is not None
    assert shown.modelinfo["general.architecture"] == "llama"
    assert shown.modelinfo["llama.context_length"] == 2048
    # ChatML has no tool-call syntax: tools are answered in text, as llama-server answers them.
    assert shown.capabilities == ["completion"]
    assert shown.parameters is not None
    assert "num_ctx" in shown.parameters
    assert "insert" in (client.show("coder:latest").capabilities or [])
    assert "thinking" in (client.show("thinker").capabilities or [])
    assert client.show("embedder").capabilities == ["embedding"]
    assert "vision" in (client.show("seer").capabilities or [])
    assert "tools" in (client.show("caller").capabilities or [])


def test_a_preset_s_embeddings_show_as_a_capability(
    shared_router: RouterProcess, client: ollama.Client
) -> None:
    """``embeddings = on`` in its preset: the chat model answers ``/api/embed`` too, and Ollama's
    clients that pick an embedding model by its capabilities find it (docs/api.md)."""
    assert client.show("dual").capabilities == ["completion", "embedding"]
    [vector] = client.embed(model="dual", input="a sheep").embeddings
    assert len(vector) > 0
    listed = {m["id"]: m for m in shared_router.client.get("/v1/models").json()["data"]}
    assert listed["dual"]["capabilities"] == ["completion", "embedding"]
    assert listed["embedder"]["capabilities"] == ["embedding"]
    assert listed["alpha"]["capabilities"] == ["completion"]


def test_show_of_an_unknown_model_is_ollamas_404(client: ollama.Client) -> None:
    with pytest.raises(ollama.ResponseError) as caught:
        client.show("nobody:latest")
    assert caught.value.status_code == 404
    assert "not found" in caught.value.error


def test_ps_lists_a_loaded_model_with_its_context_and_expiry(
    shared_router: RouterProcess, client: ollama.Client
) -> None:
    client.generate(model="alpha", prompt="")  # Ollama's way to load a model
    loaded = {model.model: model for model in client.ps().models}
    assert "alpha:latest" in loaded
    alpha = loaded["alpha:latest"]
    assert alpha.context_length == 512  # the worker's, not the GGUF's 2048
    assert alpha.size is not None
    assert alpha.size > 0
    assert alpha.size_vram == 0  # every layer on the CPU here
    # No ttl: kept for ever, which Ollama writes as a time centuries away.
    assert alpha.expires_at is not None
    assert alpha.expires_at > datetime.now(UTC) + timedelta(days=365 * 100)
    client.generate(model="alpha", prompt="", keep_alive="10m")
    alpha = {model.model: model for model in client.ps().models}["alpha:latest"]
    assert alpha.expires_at is not None
    left = alpha.expires_at - datetime.now(UTC)
    assert timedelta(minutes=5) < left <= timedelta(minutes=10)  # 10 minutes from its last use
