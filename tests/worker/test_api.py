"""The worker's HTTP routes, against a real worker process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.worker_process import worker


@pytest.fixture(scope="module")
def client(models_dir: Path) -> Iterator[httpx.Client]:
    with (
        worker(models_dir / "beta.gguf", "--metrics") as child,
        httpx.Client(base_url=child.url) as http,
    ):
        yield http


def test_models_and_props_describe_the_model(client: httpx.Client) -> None:
    listed = client.get("/v1/models").json()
    assert [entry["id"] for entry in listed["data"]] == ["beta"]
    props = client.get("/props").json()
    assert props["model_alias"] == "beta"
    # beta has no template of its own: ChatML, never llama-cpp-python's llama-2 fallback.
    assert listed["data"][0]["meta"]["chat_template"] == "chatml"
    assert "<|im_start|>" in props["chat_template"]
    assert props["default_generation_settings"]["n_ctx"] == 256


def test_tokenize_with_pieces(client: httpx.Client) -> None:
    body = client.post("/tokenize", json={"content": "the world", "with_pieces": True}).json()
    pieces = body["tokens"]
    assert all(set(piece) == {"id", "piece"} for piece in pieces)
    assert "".join(piece["piece"] for piece in pieces).strip() == "the world"


def test_detokenize_rejects_out_of_range_ids(client: httpx.Client) -> None:
    response = client.post("/detokenize", json={"tokens": [10**9]})
    assert response.status_code == 400
    assert "out of range" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("field", "value"),
    [("repeat_last_n", -1), ("dry_allowed_length", -2), ("min_keep", -1), ("max_tokens", -7)],
)
def test_a_value_beyond_a_hard_limit_is_400_naming_the_field(
    client: httpx.Client, field: str, value: float
) -> None:
    response = client.post(
        "/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "hi"}], field: value},
    )
    assert response.status_code == 400
    assert field in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("field", "value", "used"),
    [("temperature", -0.5, 0.0), ("top_p", 1.5, 1.0), ("min_p", -1, 0.0), ("top_k", -3, 0),
     ("mirostat", 3, 2)],
)  # fmt: skip
def test_a_value_beyond_a_soft_limit_is_clamped_as_llama_server_does(
    client: httpx.Client, field: str, value: float, used: float
) -> None:
    body = {"prompt": "hi", "n_predict": 1, field: value}
    response = client.post("/completion", json=body)
    assert response.status_code == 200
    assert response.json()["generation_settings"][field] == used


def test_prompt_beyond_the_context_is_a_400(client: httpx.Client) -> None:
    response = client.post(
        "/v1/completions", json={"prompt": "the world " * 400, "max_tokens": 4, "stream": True}
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "exceed_context_size_error"
    # Where llama-server puts the sizes, so clients can shorten the prompt.
    assert error["n_prompt_tokens"] > error["n_ctx"] == 256


def test_apply_template_renders_without_generating(client: httpx.Client) -> None:
    body = {"messages": [{"role": "user", "content": "Hello there"}]}
    prompt = client.post("/apply-template", json=body).json()["prompt"]
    assert prompt.endswith("<|im_start|>assistant\n")
    assert "<|im_start|>user\nHello there<|im_end|>" in prompt


def test_llamacpp_metrics_move_with_generation(client: httpx.Client) -> None:
    def samples() -> dict[str, float]:
        text = client.get("/metrics").text
        return {
            sample.name: sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    before = samples()
    assert "llamacpp:prompt_tokens_total" in before
    reply = client.post(
        "/completion", json={"prompt": "the world", "n_predict": 5, "ignore_eos": True}
    ).json()
    after = samples()
    assert after["llamacpp:tokens_predicted_total"] - before["llamacpp:tokens_predicted_total"] == 5
    assert after["llamacpp:n_decode_total"] > before["llamacpp:n_decode_total"]
    prompt_delta = after["llamacpp:prompt_tokens_total"] - before["llamacpp:prompt_tokens_total"]
    assert prompt_delta == reply["tokens_evaluated"] - reply["tokens_cached"]
    assert after["llamacpp:requests_processing"] == 0
