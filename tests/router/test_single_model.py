"""Single-model mode end to end: ``corral serve -m FILE`` answers as llama-server with one model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from router.cli.no_effect import no_effect_flags
from router.cli.serve_flags import serve_parser
from tests.support.files.hub_cache import REPO, lay_out
from tests.support.router_process import RouterProcess, running_router

CHAT = [{"role": "user", "content": "Say something."}]
NOTICE = "flag accepted for llama-server compatibility has no effect here"


@pytest.fixture(scope="module")
def single(models_dir: Path) -> Iterator[RouterProcess]:
    args = ["-m", str(models_dir / "alpha.gguf"), "--alias", "tiny,small", "--tags", "t1,t2"]
    with running_router([*args, "--ctx-size", "512"]) as process:
        yield process


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/chat/completions", {"messages": CHAT, "max_tokens": 2}),
        ("/v1/completions", {"prompt": "Once", "max_tokens": 2}),
        ("/completion", {"prompt": "Once", "n_predict": 2}),
        ("/v1/completions", {"model": "gpt-3.5-turbo-instruct", "prompt": "Once", "max_tokens": 2}),
        ("/v1/chat/completions", {"model": "test", "messages": CHAT, "max_tokens": 2}),
        ("/v1/chat/completions", {"model": "tiny", "messages": CHAT, "max_tokens": 2}),
        ("/tokenize", {"content": "hello"}),
    ],
)
def test_any_model_name_or_none_reaches_the_one_model(
    single: RouterProcess, path: str, body: dict[str, object]
) -> None:
    response = single.client.post(path, json=body)
    assert response.status_code == 200, response.text
    if "model" in response.json():
        assert response.json()["model"] == "small"  # as llama-server: the first alias


def test_get_routes_take_any_model_query(single: RouterProcess) -> None:
    assert single.client.get("/slots").status_code == 200
    slots = single.client.get("/slots", params={"model": "davinci-002"})
    assert slots.status_code == 200, slots.text
    assert slots.json()[0]["n_ctx"] == 512


def test_openai_client_with_an_arbitrary_model_name(single: RouterProcess) -> None:
    with openai.OpenAI(base_url=f"{single.url}/v1", api_key="unused", max_retries=0) as client:
        reply = client.chat.completions.create(
            model="whatever-the-client-says",
            messages=[{"role": "user", "content": "Say something."}],
            max_tokens=3,
        )
    assert reply.model == "small"
    assert reply.choices[0].message.content


def test_the_model_is_listed_alone_named_by_its_first_alias(single: RouterProcess) -> None:
    for path in ("/v1/models", "/models"):
        data = single.client.get(path).json()["data"]
        assert [entry["id"] for entry in data] == ["small"]
        # As llama-server: every --alias, the id included (the file's stem still reaches it).
        assert data[0]["aliases"] == ["small", "tiny"]
        assert data[0]["tags"] == ["t1", "t2"]
    # llama-server's Ollama-style list beside the OpenAI one.
    ollama = single.client.get("/v1/models").json()["models"]
    assert [(m["name"], m["capabilities"]) for m in ollama] == [("small", ["completion"])]


def test_a_hub_model_alone_is_the_single_model(models_dir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    gguf = (models_dir / "alpha.gguf").read_bytes()
    lay_out(cache, {"tiny-Q8_0.gguf": gguf})
    lay_out(cache, {"other-Q4_0.gguf": gguf}, repo="acme/other-GGUF")
    args = ["-hf", f"{REPO}:Q8_0", "--alias", "chat", "--offline"]
    with running_router(args, {"HF_HUB_CACHE": str(cache)}) as router:
        data = router.client.get("/v1/models").json()["data"]
        assert [(e["id"], e["aliases"]) for e in data] == [("chat", ["chat"])]
        reply = router.client.post(
            "/v1/completions", json={"model": "x", "prompt": "a", "max_tokens": 2}
        )
        assert reply.status_code == 200, reply.text
        assert reply.json()["model"] == "chat"


def test_props_without_a_model_is_the_models_own(single: RouterProcess) -> None:
    props = single.client.get("/props").json()
    assert props.get("role") != "router"
    assert props["model_path"].endswith("alpha.gguf")
    assert props["total_slots"] == 4  # llama-server's automatic slots


def test_several_models_still_refuse_unknown_and_missing_names(models_dir: Path) -> None:
    files = ["-m", str(models_dir / "alpha.gguf"), "-m", str(models_dir / "beta.gguf")]
    with running_router([*files, "--alias", "tiny"]) as router:
        unknown = router.client.post(
            "/v1/completions", json={"model": "gpt-3.5-turbo-instruct", "prompt": "x"}
        )
        assert unknown.status_code == 404
        missing = router.client.post("/v1/completions", json={"prompt": "x"})
        assert missing.status_code == 400
        assert router.client.get("/props").json()["role"] == "router"
        assert "models" not in router.client.get("/v1/models").json()
        assert router.client.post("/tokenize", json={"model": "tiny"}).status_code == 404
        router.wait_for_log(NOTICE, flag="--alias")


NO_EFFECT_FLAGS = no_effect_flags(serve_parser())


def _no_effect_argv() -> list[str]:
    argv: list[str] = []
    for spellings, arity in NO_EFFECT_FLAGS:
        argv += [spellings[-1], *(["7"] * arity)]
    return argv


def test_every_no_effect_flag_starts_and_is_noted_once(models_dir: Path) -> None:
    # Each flag twice: a value-taking one must consume its value, else the next flag breaks.
    argv = _no_effect_argv() * 2
    with running_router(["-m", str(models_dir / "alpha.gguf"), *argv]) as router:
        router.wait_for_log("model loaded")  # /health is 503 until then, as llama-server's
        assert router.client.get("/health").status_code == 200
        noted = [r["flag"] for r in router.records if r.get("event") == NOTICE]
        assert noted == [spellings[0] for spellings, _ in NO_EFFECT_FLAGS]


def test_metrics_are_the_models_own_and_only_with_metrics(models_dir: Path) -> None:
    # As llama-server with one model: /metrics is its llamacpp:* text, 501 without --metrics.
    model = ["-m", str(models_dir / "alpha.gguf")]
    with running_router(model) as router:
        assert router.client.get("/metrics").status_code == 501
    with running_router([*model, "--metrics"]) as router:
        response = router.client.get("/metrics")
        assert response.status_code == 200
        assert "llamacpp:n_decode_total" in response.text
        assert "Process-Start-Time-Unix" in response.headers


def test_it_listens_on_every_address_of_host(models_dir: Path) -> None:
    args = ["-m", str(models_dir / "alpha.gguf"), "--host", "127.0.0.1,::1"]
    with running_router(args) as router:
        urls = [r["url"] for r in router.records if r.get("event") == "corral listening"]
        assert [url.rsplit(":", 1)[0] for url in urls] == ["http://127.0.0.1", "http://[::1]"]
        assert len({url.rsplit(":", 1)[1] for url in urls}) == 1  # one port for both
        router.wait_for_log("model loaded")
        for url in urls:
            assert httpx.get(f"{url}/health", timeout=30).status_code == 200


def test_hf_file_serves_that_file_of_the_repository(models_dir: Path, tmp_path: Path) -> None:
    # As llama-server's --hf-file: one repository holding several models, one picked by path.
    cache = tmp_path / "hub"
    lay_out(
        cache,
        {
            "bert/ggml-model-f16.gguf": (models_dir / "alpha.gguf").read_bytes(),
            "jina/ggml-model-f16.gguf": (models_dir / "beta.gguf").read_bytes(),
        },
        repo="ggml-org/models",
    )
    args = ["-hf", "ggml-org/models", "--hf-file", "jina/ggml-model-f16.gguf", "--alias", "j"]
    with running_router([*args, "--offline"], {"HF_HUB_CACHE": str(cache)}) as router:
        data = router.client.get("/v1/models").json()["data"]
        assert [entry["id"] for entry in data] == ["j"]
        props = router.client.get("/props").json()
        assert props["chat_template"] != ""  # beta has none of its own: ChatML, as the worker says
        assert "<|im_start|>" in props["chat_template"]


def test_a_request_wakes_the_sleeping_model_for_the_next(models_dir: Path) -> None:
    # Upstream's debug hold (2 s per proxied request) is its router mode's; with it here, the
    # /props after a wake would arrive past the 1 s idle limit and find the model asleep again.
    args = ["-m", str(models_dir / "alpha.gguf"), "--sleep-idle-seconds", "1"]
    with running_router(args, {"LLAMA_SERVER_DEBUG_FAKE_TIMING": "1"}) as router:
        router.wait_for_log("model asleep: weights freed")
        assert router.client.get("/props").json()["is_sleeping"] is True
        woken = router.client.post("/completion", json={"prompt": "Once", "n_predict": 1})
        assert woken.status_code == 200
        assert router.client.get("/props").json()["is_sleeping"] is False
