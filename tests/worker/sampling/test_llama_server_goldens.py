"""Corral samples as llama-server samples: the same body, the same seed, the same text.

llama-server's answers were recorded once from the llama.cpp Corral runs
(scripts/record_sampling_goldens.py → tests/worker/sampling_goldens/llama_server.json): one
``/completion`` per sampling option and some mixes, chats, server-wide defaults and bad values,
all on the tiny ``alpha`` model, which the conftest writes byte for byte as the script did.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.router_process import running_router
from tests.support.worker_process import worker

GOLDENS = Path(__file__).resolve().parent.parent / "sampling_goldens" / "llama_server.json"
# generation_settings fields that say how a request sampled (the rest is not sampling).
_SAMPLING_KEYS = (
    "temperature", "dynatemp_range", "dynatemp_exponent", "top_k", "top_p", "min_p",
    "top_n_sigma", "xtc_probability", "xtc_threshold", "typical_p", "repeat_last_n",
    "repeat_penalty", "presence_penalty", "frequency_penalty", "dry_multiplier", "dry_base",
    "dry_allowed_length", "dry_penalty_last_n", "dry_sequence_breakers", "mirostat",
    "mirostat_tau", "mirostat_eta", "adaptive_target", "adaptive_decay", "ignore_eos",
    "min_keep", "samplers",
)  # fmt: skip


# ggml's CPU kernels sum float32 in an order that depends on the SIMD width (AVX2, AVX-512),
# and the goldens were recorded on an AVX-512 machine. On this random-weight model some
# distributions are nearly flat, so a case may meet a near-tie where the two round to different
# tokens: such a case is compared up to its first such tie (characters, measured on an AVX2
# EPYC), and the log probabilities within what that rounding moves them (relative, after six
# tokens: 5e-4 measured).
_CPU_DEPENDENT_AFTER = {"logit_bias": 51}
_PROBABILITY_REL = 2e-3


@cache
def _goldens() -> dict[str, Any]:
    goldens: dict[str, Any] = json.loads(GOLDENS.read_text())
    return goldens


def _cases(*path: str) -> list[Any]:
    part = _goldens()
    for key in path:
        part = part[key]
    return [pytest.param(case, id=name) for name, case in part.items()]


def _sampling(settings: dict[str, Any]) -> dict[str, Any]:
    # llama-server writes its floats as float32 (0.949999988079071 for 0.95).
    return {
        key: pytest.approx(value, rel=1e-6) if isinstance(value, float) else value
        for key, value in settings.items()
        if key in _SAMPLING_KEYS
    }


@pytest.fixture(scope="module")
def client(models_dir: Path) -> Iterator[httpx.Client]:
    with (
        worker(models_dir / "alpha.gguf", *_goldens()["server_flags"]) as child,
        httpx.Client(base_url=child.url, timeout=120) as http,
    ):
        yield http


@pytest.mark.parametrize("case", _cases("completions"))
def test_a_completion_draws_llama_servers_tokens(
    client: httpx.Client, case: Any, request: pytest.FixtureRequest
) -> None:
    answer = client.post("/completion", json=case["body"]).json()
    same_on_every_cpu = _CPU_DEPENDENT_AFTER.get(request.node.callspec.id)
    if same_on_every_cpu is None:
        assert answer["content"] == case["content"]
    else:
        assert answer["content"][:same_on_every_cpu] == case["content"][:same_on_every_cpu]
    assert _sampling(case["settings"]) == {
        key: value for key, value in answer["generation_settings"].items() if key in _SAMPLING_KEYS
    }


def _probabilities(entries: list[dict[str, Any]]) -> list[Any]:
    """Token ids with their probabilities or log probabilities, within CPU kernels' rounding."""
    shown = []
    for entry in entries:
        key = "prob" if "prob" in entry else "logprob"
        top = entry["top_probs" if key == "prob" else "top_logprobs"]
        shown.append(
            (
                entry["id"],
                pytest.approx(entry[key], rel=_PROBABILITY_REL, abs=1e-6),
                [(t["id"], pytest.approx(t[key], rel=_PROBABILITY_REL, abs=1e-6)) for t in top],
            )
        )
    return shown


@pytest.mark.parametrize("case", _cases("probs"))
def test_probabilities_are_llama_servers(client: httpx.Client, case: Any) -> None:
    answer = client.post("/completion", json=case["body"]).json()
    expected = _probabilities(case["probabilities"])
    assert _probabilities(answer["completion_probabilities"]) == expected


@pytest.mark.parametrize("case", _cases("bad"))
def test_a_bad_value_gets_llama_servers_answer(client: httpx.Client, case: Any) -> None:
    response = client.post("/completion", json=case["body"])
    assert response.status_code == case["status"]
    if case["status"] == 200:
        assert response.json()["content"] == case["answer"]["content"]
    else:
        error, expected = response.json()["error"], case["answer"]["error"]
        assert (error["code"], error["type"]) == (expected["code"], expected["type"])
        assert error["message"] == expected["message"]


@pytest.fixture(scope="module")
def router(models_dir: Path) -> Iterator[httpx.Client]:
    """``corral serve -m`` with llama-server's flags."""
    with running_router(["-m", str(models_dir / "alpha.gguf"), *_goldens()["server_flags"]]) as r:
        yield r.client


@pytest.mark.parametrize("case", _cases("chats"))
def test_a_chat_through_corral_serve_and_the_openai_client_draws_llama_servers_tokens(
    router: httpx.Client, case: Any
) -> None:
    body = dict(case["body"])
    openai_fields = {k: body.pop(k) for k in ("messages", "seed", "max_tokens", "temperature")}
    base_url = str(router.base_url).rstrip("/") + "/v1"
    with openai.OpenAI(base_url=base_url, api_key="none") as oai:
        answer = oai.chat.completions.create(model="alpha", **openai_fields, extra_body=body)
    assert answer.choices[0].message.content == case["content"]


@pytest.fixture(scope="module")
def router_with_defaults(models_dir: Path) -> Iterator[httpx.Client]:
    """``corral serve -m`` with llama-server's sampling flags as every request's defaults."""
    flags = [*_goldens()["server_flags"], *_goldens()["server_defaults"]["flags"]]
    with running_router(["-m", str(models_dir / "alpha.gguf"), *flags]) as r:
        yield r.client


def test_server_flags_are_the_defaults_props_shows(router_with_defaults: httpx.Client) -> None:
    props = router_with_defaults.get("/props", params={"model": "alpha"}).json()
    expected = _sampling(_goldens()["server_defaults"]["params"])
    shown = props["default_generation_settings"]["params"]
    assert expected == {key: shown[key] for key in expected}


@pytest.mark.parametrize("case", _cases("server_defaults", "completions"))
def test_server_flags_apply_until_a_request_names_a_field(
    router_with_defaults: httpx.Client, case: Any
) -> None:
    body = {"model": "alpha", **case["body"]}
    answer = router_with_defaults.post("/completion", json=body).json()
    assert answer["content"] == case["content"]


@pytest.mark.parametrize("case", _cases("chats"))
def test_anthropic_messages_through_corral_serve_sample_as_llama_servers_chat(
    router: httpx.Client, case: Any
) -> None:
    # llama-server's own Messages route drops the seed (and all but temperature, top_p and
    # top_k), so its answers cannot be recorded; Corral's passes every field on, as its chat.
    answer = router.post("/v1/messages", json={"model": "alpha", **case["body"]}).json()
    assert "".join(b["text"] for b in answer["content"] if b["type"] == "text") == case["content"]


@pytest.mark.parametrize("case", _cases("responses"))
def test_openai_responses_through_corral_serve_draw_llama_servers_tokens(
    router: httpx.Client, case: Any
) -> None:
    body = dict(case["body"])
    fields = {k: body.pop(k) for k in ("input", "max_output_tokens", "temperature")}
    base_url = str(router.base_url).rstrip("/") + "/v1"
    with openai.OpenAI(base_url=base_url, api_key="none") as oai:
        answer = oai.responses.create(model="alpha", **fields, extra_body=body)
    assert answer.output_text == case["content"]


@pytest.mark.parametrize("name", ["file_only", "flag_wins"])
def test_a_model_files_sampling_defaults_count_where_no_flag_was_given(
    tmp_path: Path, name: str
) -> None:
    goldens = _goldens()["model_defaults"]
    model = write_tiny_gguf(tmp_path / "alpha.gguf", name="alpha", strings=goldens["strings"])
    case = goldens[name]
    with (
        worker(model, *_goldens()["server_flags"], *case["flags"]) as child,
        httpx.Client(base_url=child.url, timeout=120) as http,
    ):
        shown = http.get("/props").json()["default_generation_settings"]["params"]
        expected = _sampling(case["params"])
        assert expected == {key: shown[key] for key in expected}
        assert http.post("/completion", json=case["body"]).json()["content"] == case["content"]
