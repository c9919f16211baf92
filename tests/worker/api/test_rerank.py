"""Reranking through a real worker: llama-server's Jina and TEI shapes, prompts and errors.

The tiny llama model has no classifier head, so with rank pooling (causal attention pools the
last token) a score is the first hidden value of the prompt's last token: meaningless, but
finite and a pure function of the prompt, which is what these tests rely on.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.worker_process import WorkerProcess, worker

PATHS = ["/rerank", "/v1/rerank", "/reranking", "/v1/reranking"]
QUERY = "hello world"
DOCUMENTS = ["the story", "once upon a time", "hello world", "the story", "water is long"]
BOS = 1  # the tiny models' <s>
RERANK_TEMPLATE = "<s>query: {query}<|im_end|>document: {document}</s>"


@pytest.fixture(scope="module")
def reranker(models_dir: Path) -> Iterator[WorkerProcess]:
    with worker(models_dir / "alpha.gguf", "--reranking") as child:
        yield child


def _rerank(child: WorkerProcess, body: dict[str, Any], path: str = "/v1/rerank") -> Any:
    response = httpx.post(f"{child.url}{path}", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def _tokens(child: WorkerProcess, text: str, *, parse_special: bool = False) -> list[int]:
    body = {"content": text, "add_special": False, "parse_special": parse_special}
    tokens: list[int] = httpx.post(f"{child.url}/tokenize", json=body).json()["tokens"]
    return tokens


def test_results_rank_every_document_by_score(reranker: WorkerProcess) -> None:
    answer = _rerank(reranker, {"query": QUERY, "documents": DOCUMENTS})
    assert answer["object"] == "list"
    assert answer["model"] == "alpha"
    results = answer["results"]
    assert sorted(r["index"] for r in results) == list(range(len(DOCUMENTS)))
    scores = [r["relevance_score"] for r in results]
    assert all(math.isfinite(s) for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert len(set(scores)) > 1  # the documents really were told apart
    by_index = {r["index"]: r["relevance_score"] for r in results}
    assert by_index[0] == by_index[3]  # the same document twice


def test_scores_are_deterministic_and_do_not_depend_on_the_other_documents(
    reranker: WorkerProcess,
) -> None:
    first = _rerank(reranker, {"query": QUERY, "documents": DOCUMENTS})["results"]
    again = _rerank(reranker, {"query": QUERY, "documents": DOCUMENTS})["results"]
    assert again == first
    alone = _rerank(reranker, {"query": QUERY, "documents": [DOCUMENTS[1]]})["results"]
    assert alone[0]["relevance_score"] == next(
        r["relevance_score"] for r in first if r["index"] == 1
    )


def test_top_n_keeps_the_best(reranker: WorkerProcess) -> None:
    full = _rerank(reranker, {"query": QUERY, "documents": DOCUMENTS})
    top = _rerank(reranker, {"query": QUERY, "documents": DOCUMENTS, "top_n": 2})
    assert top["results"] == full["results"][:2]
    assert top["usage"] == full["usage"]  # every document is scored, whatever top_n says
    none = _rerank(reranker, {"query": QUERY, "documents": DOCUMENTS, "top_n": 0})
    assert none["results"] == []
    more = _rerank(reranker, {"query": QUERY, "documents": DOCUMENTS, "top_n": 99})
    assert more["results"] == full["results"]


def test_usage_counts_bos_query_and_document_tokens(reranker: WorkerProcess) -> None:
    # The tiny vocabulary adds BOS but neither EOS nor SEP: [BOS] query document.
    answer = _rerank(reranker, {"query": QUERY, "documents": DOCUMENTS})
    query = len(_tokens(reranker, QUERY))
    expected = sum(1 + query + len(_tokens(reranker, d)) for d in DOCUMENTS)
    assert answer["usage"] == {"prompt_tokens": expected, "total_tokens": expected}


def test_score_is_the_rank_pooled_output_of_the_prompt(reranker: WorkerProcess) -> None:
    answer = _rerank(reranker, {"query": QUERY, "documents": [DOCUMENTS[1]]})
    prompt = [BOS, *_tokens(reranker, QUERY), *_tokens(reranker, DOCUMENTS[1])]
    body = {"content": prompt, "embd_normalize": -1}
    pooled = httpx.post(f"{reranker.url}/embedding", json=body).json()[0]["embedding"]
    # Rank pooling gives one value per classifier output (one here), never n_embd of them.
    assert pooled == [[answer["results"][0]["relevance_score"]]]


def test_tei_format_answers_a_bare_list(reranker: WorkerProcess) -> None:
    jina = _rerank(reranker, {"query": QUERY, "documents": DOCUMENTS})["results"]
    tei = _rerank(reranker, {"query": QUERY, "texts": DOCUMENTS, "return_text": True}, "/rerank")
    assert [(r["index"], r["score"]) for r in tei] == [
        (r["index"], r["relevance_score"]) for r in jina
    ]
    assert [r["text"] for r in tei] == [DOCUMENTS[r["index"]] for r in tei]
    plain = _rerank(reranker, {"query": QUERY, "texts": DOCUMENTS, "top_n": 1}, "/rerank")
    assert plain == [{"index": tei[0]["index"], "score": tei[0]["score"]}]


def test_model_field_is_echoed(reranker: WorkerProcess) -> None:
    answer = _rerank(reranker, {"model": "my-reranker", "query": QUERY, "documents": ["x"]})
    assert answer["model"] == "my-reranker"


@pytest.mark.parametrize("path", PATHS)
def test_every_path_answers(reranker: WorkerProcess, path: str) -> None:
    answer = _rerank(reranker, {"query": QUERY, "documents": DOCUMENTS[:2]}, path)
    assert sorted(r["index"] for r in answer["results"]) == [0, 1]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"documents": ["a"]}, '"query" must be provided'),
        ({"query": 1, "documents": ["a"]}, '"query" must be a string'),
        ({"query": None, "documents": ["a"]}, '"query" must be a string'),
        ({"query": "q"}, '"documents" must be a non-empty string array'),
        ({"query": "q", "documents": []}, '"documents" must be a non-empty string array'),
        ({"query": "q", "documents": ["a", 2]}, '"documents" must be a non-empty string array'),
        ({"query": "q", "documents": "a"}, '"documents" must be a non-empty string array'),
        ({"query": "q", "texts": []}, '"documents" must be a non-empty string array'),
        ({"query": "q", "documents": ["a"], "top_n": "2"}, "top_n"),
        ({"query": "q", "documents": ["a"], "top_n": -1}, "top_n"),
        ({"query": "q", "texts": ["a"], "return_text": "yes"}, "return_text"),
    ],
)
def test_malformed_requests_are_400(
    reranker: WorkerProcess, body: dict[str, Any], message: str
) -> None:
    response = httpx.post(f"{reranker.url}/v1/rerank", json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert message in error["message"]


def test_a_document_longer_than_the_context_is_400(reranker: WorkerProcess) -> None:
    documents = ["the story", "the " * 300]  # the worker's context is 256 tokens
    response = httpx.post(f"{reranker.url}/v1/rerank", json={"query": "q", "documents": documents})
    assert response.status_code == 400
    assert "document 1" in response.json()["error"]["message"]
    assert "is too large to process" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "flags", [(), ("--embeddings",), ("--pooling", "rank"), ("--embeddings", "--pooling", "mean")]
)
def test_reranking_needs_embeddings_with_rank_pooling(
    models_dir: Path, flags: tuple[str, ...]
) -> None:
    with worker(models_dir / "alpha.gguf", *flags) as child:
        response = httpx.post(f"{child.url}/v1/rerank", json={"query": "q", "documents": ["a"]})
        assert response.status_code == 501
        error = response.json()["error"]
        assert error["type"] == "not_supported_error"
        assert "--reranking" in error["message"]


def test_embeddings_with_rank_pooling_serve_reranking(models_dir: Path) -> None:
    with worker(models_dir / "alpha.gguf", "--embeddings", "--pooling", "rank") as child:
        answer = _rerank(child, {"query": QUERY, "documents": ["a", "b"]})
        assert len(answer["results"]) == 2


@pytest.fixture(scope="module")
def templated_reranker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:
    path = tmp_path_factory.mktemp("rerank") / "templated.gguf"
    write_tiny_gguf(path, name="templated", rerank_template=RERANK_TEMPLATE)
    with worker(path, "--rerank") as child:
        yield child


def test_a_rerank_template_in_the_gguf_shapes_the_prompt(
    templated_reranker: WorkerProcess,
) -> None:
    child = templated_reranker
    answer = _rerank(child, {"query": QUERY, "documents": DOCUMENTS[:2]})
    rendered = [
        RERANK_TEMPLATE.replace("{query}", QUERY).replace("{document}", d) for d in DOCUMENTS[:2]
    ]
    # Special tokens in the template are parsed ("<s>" is one token), and none are added.
    templated = sum(len(_tokens(child, text, parse_special=True)) for text in rendered)
    layout = sum(1 + len(_tokens(child, QUERY)) + len(_tokens(child, d)) for d in DOCUMENTS[:2])
    assert answer["usage"]["prompt_tokens"] == templated
    assert templated != layout
