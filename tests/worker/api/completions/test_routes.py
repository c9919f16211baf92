"""llama-server's ``/completion`` answer and prompt shapes, against a real worker process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.worker_process import worker


@pytest.fixture(scope="module")
def client(models_dir: Path) -> Iterator[httpx.Client]:
    args = ("--parallel", "2", "--ctx-size", "512", "--seed", "42")
    with (
        worker(models_dir / "alpha.gguf", *args) as child,
        httpx.Client(base_url=child.url, timeout=120) as http,
    ):
        yield http


def _complete(client: httpx.Client, **body: Any) -> Any:
    response = client.post("/completion", json={"n_predict": 4, **body})
    assert response.status_code == 200, response.text
    return response.json()


def test_the_answer_carries_llama_servers_fields(client: httpx.Client) -> None:
    body = _complete(client, prompt="hello world", return_tokens=True, seed=7)
    assert len(body["tokens"]) == body["tokens_predicted"] == 4
    assert body["prompt"] == "<s> hello world"  # the prompt as text, BOS included
    assert body["truncated"] is False
    assert isinstance(body["has_new_line"], bool)
    settings = body["generation_settings"]
    assert (settings["n_predict"], settings["seed"], settings["logit_bias"]) == (4, 7, [])
    assert _complete(client, prompt="hello")["tokens"] == []  # only when asked


def test_only_the_v1_route_answers_in_openais_shape(client: httpx.Client) -> None:
    # llama-server serves /completions with its native handler, /v1/completions with OpenAI's.
    native = client.post("/completions", json={"prompt": "hello", "n_predict": 2}).json()
    assert native["tokens_predicted"] == 2
    assert isinstance(native["content"], str)
    assert "choices" not in native
    oai = client.post("/v1/completions", json={"prompt": "hello", "max_tokens": 2}).json()
    assert oai["object"] == "text_completion"
    assert "content" not in oai


def test_response_fields_keep_only_those_paths(client: httpx.Client) -> None:
    fields = ["content", "generation_settings/n_predict", "no/such"]
    body = _complete(client, prompt="hello", response_fields=fields)
    assert set(body) == {"content", "generation_settings/n_predict"}
    assert body["generation_settings/n_predict"] == 4


def test_several_prompts_get_one_answer_each_in_order(client: httpx.Client) -> None:
    tokens = client.post("/tokenize", json={"content": "the story", "add_special": True})
    ids = tokens.json()["tokens"]
    prompts = [ids, "the story", {"prompt_string": "the story"}]
    answers = _complete(client, prompt=prompts, temperature=0)
    assert [a["index"] for a in answers] == [0, 1, 2]
    assert len({a["content"] for a in answers}) == 1  # one prompt, spelled three ways
    oai = client.post("/v1/completions", json={"prompt": ["a", "b"], "max_tokens": 2}).json()
    assert [c["index"] for c in oai["choices"]] == [0, 1]


@pytest.mark.parametrize(
    "prompt", [{"prompt_string": "a", "multimodal_data": ["AAAA"]}, [], [1, [2]], [10**9]]
)
def test_prompts_llama_server_refuses_are_400(client: httpx.Client, prompt: Any) -> None:
    response = client.post("/completion", json={"prompt": prompt, "n_predict": 2})
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_n_probs_reports_each_tokens_top_candidates(client: httpx.Client) -> None:
    body = _complete(client, prompt="hello", n_probs=3, temperature=0)
    probs = body["completion_probabilities"]
    assert len(probs) == 4
    for entry in probs:
        assert entry["logprob"] <= 0
        assert len(entry["top_logprobs"]) == 3
        assert entry["bytes"] == list(entry["token"].encode())
        # Greedy: the chosen token is the likeliest one.
        assert entry["id"] == entry["top_logprobs"][0]["id"]
    post = _complete(client, prompt="hello", n_probs=3, post_sampling_probs=True)
    for entry in post["completion_probabilities"]:
        assert 0 < entry["prob"] <= 1
        assert all(0 < p["prob"] <= 1 for p in entry["top_probs"])


def test_n_probs_in_a_stream_come_with_each_token(client: httpx.Client) -> None:
    body = {"prompt": "hello", "n_predict": 3, "n_probs": 2, "stream": True}
    with client.stream("POST", "/completion", json=body) as response:
        events = [json.loads(line[6:]) for line in response.iter_lines() if line]
    pieces = [e for e in events if not e["stop"]]
    assert pieces
    assert all(len(e["completion_probabilities"]) == 1 for e in pieces)
    assert all(len(e["tokens"]) == 1 for e in pieces)


def test_a_text_logit_bias_bans_the_word(client: httpx.Client) -> None:
    plain = _complete(client, prompt="the", n_predict=16, temperature=0)["content"]
    banned = next(word for word in plain.split() if word.isalpha())
    biased = _complete(
        client, prompt="the", n_predict=16, temperature=0, logit_bias=[[" " + banned, False]]
    )
    assert f" {banned}" not in biased["content"]
    settings = biased["generation_settings"]["logit_bias"]
    assert settings
    assert all(entry["bias"] is None for entry in settings)  # -inf is null


def test_ignore_eos_bans_end_of_generation_by_bias(client: httpx.Client) -> None:
    body = _complete(client, prompt="hello", ignore_eos=True)
    banned = {entry["token"] for entry in body["generation_settings"]["logit_bias"]}
    assert banned
    assert all(e["bias"] is None for e in body["generation_settings"]["logit_bias"])
    assert _complete(client, prompt="hello")["generation_settings"]["logit_bias"] == []


def test_a_full_context_without_shifting_stops_truncated(client: httpx.Client) -> None:
    body = _complete(client, prompt="hello", n_predict=-1)
    # 512 tokens over 2 slots: the generation ends where the slot's context does.
    assert body["tokens_evaluated"] + body["tokens_predicted"] >= 255
    assert body["truncated"] is True


def test_context_shift_goes_on_past_the_context(models_dir: Path) -> None:
    # llama.cpp's smallest context is 256 tokens.
    with worker(models_dir / "alpha.gguf", "--context-shift", "--keep", "2") as child:
        body = httpx.post(
            f"{child.url}/completion",
            json={"prompt": "the story", "n_predict": 400},
            timeout=120,
        ).json()
    assert body["tokens_predicted"] == 400  # well past the 256-token context
    assert body["truncated"] is True
    assert body["generation_settings"]["n_keep"] == 2


def test_return_progress_streams_the_prompt_going_in(models_dir: Path) -> None:
    # As llama-server: a 0% event before any prompt token is decoded, then one per batch that
    # takes a piece of the prompt (8 tokens here; the last token alone), then the tokens.
    body = {"prompt": "the world " * 12, "n_predict": 2, "stream": True, "cache_prompt": False}
    with worker(models_dir / "alpha.gguf", "--batch-size", "8") as child:
        with httpx.stream("POST", f"{child.url}/completion", json=body, timeout=120) as plain:
            assert not any("prompt_progress" in line for line in plain.iter_lines())
        # llama-server puts timings on progress events only with timings_per_token.
        asked = {**body, "return_progress": True, "timings_per_token": True}
        with httpx.stream("POST", f"{child.url}/completion", json=asked, timeout=120) as answer:
            events = [json.loads(line[6:]) for line in answer.iter_lines() if line]
        whole = httpx.post(f"{child.url}/completion", json={**asked, "stream": False})
    progress = [event for event in events if "prompt_progress" in event]
    processed = [event["prompt_progress"]["processed"] for event in progress]
    total = progress[0]["prompt_progress"]["total"]
    assert processed[0] == 0
    assert processed == sorted(processed)
    assert processed[-1] == total > 16  # several batches of 8
    # The last token is read in a batch of its own (docs/serving.md, "Repeatable answers").
    assert len(progress) == 2 + -(-(total - 1) // 8)
    assert progress[0]["timings"]["prompt_n"] == 0
    assert progress[0]["timings"]["prompt_ms"] == 0.0
    assert [event["timings"]["prompt_n"] for event in progress] == processed
    # The tokens come after the prompt, and a whole answer has no progress in it.
    assert events.index(progress[-1]) < next(i for i, e in enumerate(events) if e["content"])
    assert whole.status_code == 200
    assert "prompt_progress" not in whole.json()
