"""Reranking routes (``/rerank``, ``/v1/rerank``, ``/reranking``, ``/v1/reranking``).

As llama-server: they answer only with ``--reranking`` (embeddings on, rank pooling), score each
document against the query through the embeddings context, and reply in Jina's format, or in
TEI's when the body names its documents ``texts``.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import post

from corral.http.errors import ApiError, decode_body
from corral.http.worker_routes import RERANK
from worker.api.embeddings.protocol import RerankRequest
from worker.engine.engine import Engine
from worker.engine.model import LoadedModel
from worker.state import AnyRequest, loaded

__all__ = ["rerank_routes"]


def _strings(value: Any) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    return None


def _documents(body: RerankRequest) -> list[str]:
    # Upstream reads "documents", falling back to "texts" when it is absent, null or not a list
    # of strings.
    documents = _strings(body.documents)
    if documents is None:
        documents = _strings(body.texts)
    if not documents:
        raise ApiError(400, '"documents" must be a non-empty string array')
    return documents


async def _scores(
    engine: Engine, model: LoadedModel, query: str, documents: list[str]
) -> tuple[list[float], int]:
    """Each document's score, and how many tokens they took in all."""

    def run() -> tuple[list[float], int]:
        embedder = model.embedder()
        scores: list[float] = []
        used = 0
        for index, document in enumerate(documents):
            tokens = model.rerank_prompt(query, document)
            used += len(tokens)
            try:
                scores.append(embedder.score(tokens))
            except ValueError as exc:
                raise ValueError(f"document {index}: {exc}") from None
        return scores, used

    try:
        return await engine.call(run)
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None


@post(RERANK.paths, status_code=200)
async def rerank(request: AnyRequest) -> dict[str, Any] | list[dict[str, Any]]:
    engine, model = loaded(request)
    if not (model.settings.embeddings and model.settings.pooling == "rank"):
        raise ApiError(501, "This server does not support reranking. Start it with `--reranking`")
    body = decode_body(await request.body(), RerankRequest)
    if body.query is msgspec.UNSET:
        raise ApiError(400, '"query" must be provided')
    if not isinstance(body.query, str):
        raise ApiError(400, '"query" must be a string')
    documents = _documents(body)
    tei = body.texts is not msgspec.UNSET
    scores, used = await _scores(engine, model, body.query, documents)
    label = "score" if tei else "relevance_score"
    results: list[dict[str, Any]] = []
    for index, score in enumerate(scores):
        result: dict[str, Any] = {"index": index, label: score}
        if tei and body.return_text:
            result["text"] = documents[index]
        results.append(result)
    # A stable sort: equal scores keep the documents' order (upstream's std::sort may not).
    results.sort(key=lambda result: -result[label])
    top_n = len(documents) if body.top_n is None else body.top_n
    results = results[:top_n]
    if tei:
        return results
    return {
        "model": model.settings.alias if body.model is None else body.model,
        "object": "list",
        "usage": {"prompt_tokens": used, "total_tokens": used},
        "results": results,
    }


rerank_routes = [rerank]
