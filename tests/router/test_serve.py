"""End to end: the official ``openai`` client against a real router and real workers."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from corral.llama_build import llama_build_info
from tests.support.router_process import RouterProcess, running_router

CHAT: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Say something."}]


def _official(router: RouterProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{router.url}/v1", api_key="unused", max_retries=0)


# Tests that ask what is loaded take a fresh router (`router`, `fresh_client`); the others
# share the module's (`shared_router`, `client`), whatever the tests before them loaded.
@pytest.fixture(scope="module")
def client(shared_router: RouterProcess) -> Iterator[openai.OpenAI]:
    with _official(shared_router) as official:
        yield official


@pytest.fixture
def fresh_client(router: RouterProcess) -> Iterator[openai.OpenAI]:
    with _official(router) as official:
        yield official


def test_models_are_listed_unloaded_before_any_request(router: RouterProcess) -> None:
    models = router.models()
    assert set(models) == {"alpha", "beta"}
    for entry in models.values():
        assert entry["object"] == "model"
        assert entry["status"]["value"] == "unloaded"
        assert entry["source"] == "models_dir"
        assert "failed" not in entry["status"]
        assert "meta" not in entry


def test_chat_loads_the_model_on_first_request(
    router: RouterProcess, fresh_client: openai.OpenAI
) -> None:
    reply = fresh_client.chat.completions.create(model="alpha", messages=CHAT, max_tokens=6)
    assert reply.model == "alpha"
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].message.content
    assert reply.usage is not None
    assert reply.usage.completion_tokens == 6

    models = router.models()
    assert models["alpha"]["status"]["value"] == "loaded"
    assert models["alpha"]["meta"]["n_ctx"] == 512
    assert models["beta"]["status"]["value"] == "unloaded"


def test_chat_stream_delivers_chunks_then_finishes(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(model="alpha", messages=CHAT, max_tokens=5, stream=True)
    chunks = list(stream)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text
    assert chunks[-1].choices[0].finish_reason == "length"
    assert all(chunk.model == "alpha" for chunk in chunks)


def test_completions_stream_and_not(client: openai.OpenAI) -> None:
    whole = client.completions.create(model="alpha", prompt="Once upon", max_tokens=4)
    assert whole.choices[0].text
    assert whole.usage is not None
    assert whole.usage.completion_tokens == 4
    pieces = list(
        client.completions.create(model="alpha", prompt="Once", max_tokens=4, stream=True)
    )
    assert "".join(piece.choices[0].text for piece in pieces)


def test_switching_between_models_keeps_both_running(
    router: RouterProcess, fresh_client: openai.OpenAI
) -> None:
    first = fresh_client.chat.completions.create(model="alpha", messages=CHAT, max_tokens=3)
    second = fresh_client.chat.completions.create(model="beta", messages=CHAT, max_tokens=3)
    again = fresh_client.chat.completions.create(model="alpha", messages=CHAT, max_tokens=3)
    assert (first.model, second.model, again.model) == ("alpha", "beta", "alpha")
    models = router.models()
    assert {name: entry["status"]["value"] for name, entry in models.items()} == {
        "alpha": "loaded",
        "beta": "loaded",
    }
    # beta's GGUF has no chat template: the worker must fall back to chatml, never llama-2.
    assert models["beta"]["meta"]["chat_template"] == "chatml"
    assert models["alpha"]["meta"]["chat_template"] == "gguf"


def test_unknown_model_is_404(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model="nope", messages=CHAT, max_tokens=3)
    assert caught.value.status_code == 404
    body = caught.value.response.json()
    assert body == {"error": {"code": 404, "message": NOPE, "type": "not_found_error"}}


# Nothing is close to "nope": the 404 lists what there is and how a hub model is had (issue 54).
NOPE = (
    "model 'nope' not found; models here: 'alpha', 'beta'; a hub model is fetched with "
    "`corral pull owner/repo[:quant]` (or POST /models)"
)


@pytest.mark.parametrize(
    ("route", "body", "message_of"),
    [
        ("/v1/chat/completions", {"messages": CHAT}, lambda answer: answer["error"]["message"]),
        # Anthropic's route answers in llama-server's error JSON, as its other errors do.
        ("/v1/messages", {"messages": CHAT, "max_tokens": 1}, lambda a: a["error"]["message"]),
        ("/api/chat", {"messages": CHAT}, lambda answer: answer["error"]),  # Ollama's
    ],
)
def test_every_api_s_404_says_what_there_is_in_its_own_error_json(
    shared_router: RouterProcess, route: str, body: dict[str, object], message_of: Any
) -> None:
    answer = shared_router.client.post(route, json={"model": "nope", **body})
    assert answer.status_code == 404
    assert message_of(answer.json()) == NOPE


def test_a_hub_name_s_404_says_how_to_pull_it(shared_router: RouterProcess) -> None:
    hub = "ggml-org/gemma-3-1b-it-GGUF:Q4_K_M"
    answer = shared_router.client.post(
        "/v1/chat/completions", json={"model": hub, "messages": CHAT}
    )
    assert answer.status_code == 404
    assert answer.json()["error"]["message"] == (
        f"model '{hub}' not found; models here: 'alpha', 'beta'; a hub model is fetched with "
        f"`corral pull {hub}` (or POST /models)"
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("alpah", "model 'alpah' not found; did you mean 'alpha'?"),
        ("ALPH", "model 'ALPH' not found; did you mean 'alpha'?"),
    ],
)
def test_unknown_model_names_the_closest_ones(
    shared_router: RouterProcess, name: str, message: str
) -> None:
    response = shared_router.client.post(
        "/v1/chat/completions", json={"model": name, "messages": CHAT, "max_tokens": 1}
    )
    assert response.status_code == 404
    assert response.json()["error"]["message"] == message


def test_missing_model_is_400(shared_router: RouterProcess) -> None:
    response = shared_router.client.post("/v1/chat/completions", json={"messages": CHAT})
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert "model" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "body",
    [b"{not json", b"[1, 2]", b'{"model": 5}', b""],
    ids=["malformed", "array", "wrong-type", "empty"],
)
def test_invalid_json_is_400_never_500(shared_router: RouterProcess, body: bytes) -> None:
    response = shared_router.client.post(
        "/v1/chat/completions", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == 400
    assert error["type"] == "invalid_request_error"
    assert "Traceback" not in response.text


def test_bad_field_is_400_naming_it(shared_router: RouterProcess) -> None:
    response = shared_router.client.post(
        "/v1/chat/completions",
        json={"model": "alpha", "messages": CHAT, "temperature": "hot"},
    )
    assert response.status_code == 400
    assert "temperature" in response.json()["error"]["message"]


def test_tokenize_round_trip_through_the_router(shared_router: RouterProcess) -> None:
    tokens = shared_router.client.post("/tokenize", json={"model": "alpha", "content": "the world"})
    assert tokens.status_code == 200
    ids = tokens.json()["tokens"]
    text = shared_router.client.post("/detokenize", json={"model": "alpha", "tokens": ids})
    assert text.json()["content"].strip() == "the world"
    # A short JSON answer is relayed whole, with its length, as the worker sent it.
    assert "transfer-encoding" not in tokens.headers
    assert tokens.headers["content-length"] == str(len(tokens.content))


def test_health_props_and_unknown_route(shared_router: RouterProcess) -> None:
    assert shared_router.client.get("/health").json() == {"status": "ok"}
    props = shared_router.client.get("/props").json()
    assert props["role"] == "router"
    assert props["max_instances"] == 4
    assert props["models_autoload"] is True
    assert props["cache_scope"] == "shared"  # no keys: one caller
    # llama.cpp's build, as clients parse it; Corral's version has its own field.
    assert props["build_info"] == llama_build_info()
    assert props["build_info"].startswith("b")
    assert props["corral_version"] == version("corral")
    missing = shared_router.client.get("/no/such/route")
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "not_found_error"


def test_native_completion_route(shared_router: RouterProcess) -> None:
    response = shared_router.client.post(
        "/completion", json={"model": "beta", "prompt": "Hello", "n_predict": 3}
    )
    body = response.json()
    assert response.status_code == 200
    assert body["stop"] is True
    assert body["tokens_predicted"] == 3
    assert body["content"]
    with shared_router.client.stream(
        "POST",
        "/completion",
        json={"model": "beta", "prompt": "Hi", "n_predict": 3, "stream": True},
    ) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        events = [line for line in stream.iter_lines() if line.startswith("data: ")]
    last = httpx.Response(200, content=events[-1][6:]).json()
    assert (last["content"], last["stop"]) == ("", True)
    assert isinstance(last["tokens_predicted"], int)


def test_placeholder_page_is_served_at_root(shared_router: RouterProcess) -> None:
    page = shared_router.client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "Corral" in page.text


def test_rerank_reaches_a_worker_started_with_reranking(models_dir: Path) -> None:
    args = ["--models-dir", str(models_dir), "--ctx-size", "512", "--reranking"]
    with running_router(args) as router:
        body = {"model": "alpha", "query": "hello", "documents": ["the story", "a model"]}
        response = router.client.post("/v1/rerank", json=body)
        assert response.status_code == 200, response.text
        answer = response.json()
        assert answer["model"] == "alpha"
        assert sorted(r["index"] for r in answer["results"]) == [0, 1]
        assert "--reranking" in router.models()["alpha"]["status"]["args"]
