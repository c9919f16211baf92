"""Embeddings through a real worker: shapes, unit norm, per-token vectors, and the opt-in."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from tests.support.worker_process import WorkerProcess, worker

N_EMBD = 64  # the tiny test models' width


@pytest.fixture(scope="module")
def embedding_worker(models_dir: Path) -> Iterator[WorkerProcess]:
    with worker(models_dir / "alpha.gguf", "--embeddings", "--pooling", "mean") as child:
        yield child


def _norm(vector: list[float]) -> float:
    return math.sqrt(sum(x * x for x in vector))


def test_openai_embeddings_are_unit_vectors_of_the_model_width(
    embedding_worker: WorkerProcess,
) -> None:
    url = f"{embedding_worker.url}/v1"
    with openai.OpenAI(base_url=url, api_key="x", max_retries=0) as client:
        result = client.embeddings.create(model="alpha", input=["the world", "once upon a time"])
        # The client asks for base64 (its default) and decodes it; floats give the same vector.
        plain = client.embeddings.create(model="alpha", input="the world", encoding_format="float")
    assert [item.index for item in result.data] == [0, 1]
    for item in result.data:
        assert len(item.embedding) == N_EMBD
        assert _norm(item.embedding) == pytest.approx(1.0, abs=1e-4)
    assert result.data[0].embedding != result.data[1].embedding
    assert result.usage.prompt_tokens > 0
    assert plain.data[0].embedding == pytest.approx(result.data[0].embedding, abs=1e-6)


def test_native_embedding_accepts_tokens_and_can_skip_normalising(
    embedding_worker: WorkerProcess,
) -> None:
    url = embedding_worker.url
    tokens = httpx.post(f"{url}/tokenize", json={"content": "the world"}).json()["tokens"]
    raw = httpx.post(f"{url}/embedding", json={"content": tokens, "embd_normalize": -1}).json()
    unit = httpx.post(f"{url}/embedding", json={"content": "the world"}).json()
    assert len(raw) == 1
    assert len(raw[0]["embedding"]) == 1
    assert len(raw[0]["embedding"][0]) == N_EMBD
    assert _norm(unit[0]["embedding"][0]) == pytest.approx(1.0, abs=1e-4)


def test_pooling_none_gives_one_vector_per_token(models_dir: Path) -> None:
    with worker(models_dir / "alpha.gguf", "--embeddings", "--pooling", "none") as child:
        tokens = httpx.post(f"{child.url}/tokenize", json={"content": "the world"}).json()
        body = {"content": tokens["tokens"]}
        vectors = httpx.post(f"{child.url}/embedding", json=body).json()[0]["embedding"]
        assert len(vectors) == len(tokens["tokens"])
        # As llama-server: per-token vectors are never normalised, whatever embd_normalize says.
        assert all(_norm(vector) != pytest.approx(1.0, abs=1e-3) for vector in vectors)
        # /embeddings is llama-server's native route too, not OpenAI's.
        plural = httpx.post(f"{child.url}/embeddings", json={"input": tokens["tokens"]})
        assert plural.status_code == 200
        assert plural.json()[0]["embedding"] == vectors
        refused = httpx.post(f"{child.url}/v1/embeddings", json={"input": "the world"})
        assert refused.status_code == 400
        assert "Pooling type 'none' is not OAI compatible" in refused.json()["error"]["message"]


def test_content_instead_of_input_asks_for_the_native_shape(
    embedding_worker: WorkerProcess,
) -> None:
    url = embedding_worker.url
    native = httpx.post(f"{url}/v1/embeddings", json={"content": ["the world", "hi"]})
    assert native.status_code == 200
    assert [item["index"] for item in native.json()] == [0, 1]
    assert len(native.json()[0]["embedding"][0]) == N_EMBD
    openai_shape = httpx.post(f"{url}/embeddings", json={"input": "the world"}).json()
    assert openai_shape[0]["embedding"][0] == pytest.approx(
        native.json()[0]["embedding"][0], abs=1e-6
    )
    neither = httpx.post(f"{url}/v1/embeddings", json={"model": "alpha"})
    assert neither.status_code == 400
    assert neither.json()["error"]["message"] == '"input" or "content" must be provided'


def test_embeddings_need_the_flag(models_dir: Path) -> None:
    with worker(models_dir / "alpha.gguf") as child:
        response = httpx.post(f"{child.url}/v1/embeddings", json={"input": "hi"})
        assert response.status_code == 501
        assert response.json()["error"]["type"] == "not_supported_error"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/embeddings", {"input": []}),
        ("/v1/embeddings", {"input": "x", "encoding_format": "int8"}),
        ("/v1/embeddings", {}),
        ("/embedding", {"content": "x", "embd_normalize": -2}),
        ("/embedding", {"content": "x", "embd_normalize": "2"}),
    ],
)
def test_bad_embedding_requests_are_400(
    embedding_worker: WorkerProcess, path: str, body: dict[str, object]
) -> None:
    response = httpx.post(f"{embedding_worker.url}{path}", json=body)
    assert response.status_code == 400


def test_an_input_longer_than_the_context_is_400_in_llama_servers_words(
    embedding_worker: WorkerProcess,
) -> None:
    response = httpx.post(
        f"{embedding_worker.url}/v1/embeddings", json={"input": "This is a test " * 2048}
    )
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert "is too large to process. increase the context size" in message


def test_malformed_input_is_400_naming_the_field(embedding_worker: WorkerProcess) -> None:
    response = httpx.post(f"{embedding_worker.url}/v1/embeddings", json={"input": [1.5, {}]})
    assert response.status_code == 400
    assert "input" in response.json()["error"]["message"]


def test_the_norm_is_llama_servers_and_the_flag_sets_its_default(models_dir: Path) -> None:
    args = ("--embeddings", "--pooling", "mean", "--embd-normalize", "1")
    with worker(models_dir / "alpha.gguf", *args) as child:

        def vector(**fields: object) -> list[float]:
            body = {"content": "the world", **fields}
            answer = httpx.post(f"{child.url}/embedding", json=body).raise_for_status()
            return list(answer.json()[0]["embedding"][0])

        assert sum(abs(x) for x in vector()) == pytest.approx(1.0, abs=1e-4)  # taxicab: 1
        assert _norm(vector(embd_normalize=2)) == pytest.approx(1.0, abs=1e-4)
        assert max(abs(x) for x in vector(embd_normalize=0)) == pytest.approx(32760, rel=1e-4)
        p3 = sum(abs(x) ** 3 for x in vector(embd_normalize=3)) ** (1 / 3)
        assert p3 == pytest.approx(1.0, abs=1e-4)
        raw = vector(embd_normalize=-1)
        assert vector() == pytest.approx([x / sum(abs(y) for y in raw) for x in raw], abs=1e-5)
        # OpenAI's route follows the flag too.
        with openai.OpenAI(base_url=f"{child.url}/v1", api_key="x", max_retries=0) as client:
            item = client.embeddings.create(
                model="alpha", input="the world", encoding_format="float"
            )
        assert sum(abs(x) for x in item.data[0].embedding) == pytest.approx(1.0, abs=1e-4)
