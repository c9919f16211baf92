"""Embedding routes: OpenAI's ``/v1/embeddings``, llama-server's ``/embedding`` and ``/embeddings``.

As upstream, they answer only when the worker runs with ``--embeddings``: a chat model's
vectors are rarely what a client wants, so asking for them is explicit. The router's Ollama
``/api/embed`` asks explicitly (``generative``), as Ollama answers it for any model.
"""

from __future__ import annotations

import base64
import struct
import time
from typing import Any

import msgspec
from litestar import post

from corral.http.errors import ApiError, decode_body
from corral.http.worker_routes import EMBEDDING, EMBEDDINGS
from worker.api.embeddings.protocol import EmbeddingRequest, Input
from worker.engine.embedding_context import normalized
from worker.engine.engine import Engine
from worker.engine.model import LoadedModel
from worker.engine.prompt_inputs import PromptError, tokenize_prompts
from worker.state import AnyRequest, loaded

__all__ = ["embedding_routes"]


async def _embed(
    engine: Engine, model: LoadedModel, inputs: Input, field: str
) -> tuple[list[list[list[float]]], int]:
    """Each input's vectors, and how many tokens they took in all."""

    def run() -> tuple[list[list[list[float]]], int]:
        prompts = tokenize_prompts(inputs, model.prompt_tokenizer(), content_parts=True)
        if not all(prompts):
            raise PromptError("Input content cannot be empty")
        embedder = model.embedder()
        started = time.perf_counter()
        vectors = [embedder.embed(tokens) for tokens in prompts]
        used = sum(len(tokens) for tokens in prompts)
        # As llama-server's: an embedding samples nothing, but its prompt is decoded work.
        metrics = model.metrics
        metrics.prompt_tokens += used
        metrics.prompt_seconds += time.perf_counter() - started
        metrics.n_decode += len(prompts)
        return vectors, used

    try:
        return await engine.call(run)
    except PromptError as exc:
        raise ApiError(400, f"{field}: {exc}") from None
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None


def _encode(vector: list[float], encoding_format: str) -> list[float] | str:
    if encoding_format == "float":
        return vector
    # OpenAI's base64 form, which its clients ask for by default: little-endian float32.
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()


async def _answer(request: AnyRequest, openai_shape: bool) -> Any:
    """llama-server's one embeddings handler behind all three paths: ``/v1/embeddings`` answers
    OpenAI's shape unless the body gives ``content`` instead of ``input``; ``/embedding`` and
    ``/embeddings`` answer llama-server's own list (server.cpp routes both to it)."""
    engine, model = loaded(request)
    body = decode_body(await request.body(), EmbeddingRequest)
    if not (model.settings.embeddings or body.generative):
        raise ApiError(501, "This server does not support embeddings. Start it with `--embeddings`")
    pooling = model.embedding_pooling
    if openai_shape and pooling == "none":
        raise ApiError(
            400, "Pooling type 'none' is not OAI compatible. Please use a different pooling type"
        )
    if not isinstance(body.input, msgspec.UnsetType):
        inputs, field = body.input, "input"
    elif not isinstance(body.content, msgspec.UnsetType):
        inputs, field, openai_shape = body.content, "content", False
    else:
        raise ApiError(400, '"input" or "content" must be provided')
    if body.encoding_format not in ("float", "base64"):
        raise ApiError(400, "encoding_format must be 'float' or 'base64'")
    vectors, used = await _embed(engine, model, inputs, field)
    norm = model.settings.embd_normalize if body.embd_normalize is None else body.embd_normalize
    if norm != -1 and pooling != "none":
        # As upstream: only pooled vectors are normalised, per-token ones never.
        vectors = [[normalized(v, norm) for v in per_input] for per_input in vectors]
    if not openai_shape:
        return [{"index": i, "embedding": per_input} for i, per_input in enumerate(vectors)]
    return {
        "object": "list",
        "model": model.settings.alias,
        "data": [
            {"object": "embedding", "index": i, "embedding": _encode(v[0], body.encoding_format)}
            for i, v in enumerate(vectors)
        ],
        "usage": {"prompt_tokens": used, "total_tokens": used},
    }


@post(EMBEDDINGS.paths, status_code=200)
async def openai_embeddings(request: AnyRequest) -> Any:
    return await _answer(request, openai_shape=True)


@post(EMBEDDING.paths, status_code=200)
async def native_embedding(request: AnyRequest) -> Any:
    return await _answer(request, openai_shape=False)


embedding_routes = [openai_embeddings, native_embedding]
