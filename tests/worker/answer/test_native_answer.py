"""llama-server's ``__verbose`` object in whole OpenAI answers (``--verbose``, or a request's
``verbose``), against a real worker process through the official ``openai`` client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from tests.support.worker_process import WorkerProcess, worker

CHAT = [{"role": "system", "content": "Book"}, {"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def verbose(models_dir: Path) -> Iterator[WorkerProcess]:
    with worker(models_dir / "alpha.gguf", "--ctx-size", "512", "--verbose") as process:
        yield process


def _chat(child: WorkerProcess, **extra: object) -> dict[str, object]:
    with openai.OpenAI(base_url=f"{child.url}/v1", api_key="x", max_retries=0) as client:
        answer = client.chat.completions.create(
            model="alpha",
            messages=CHAT,  # type: ignore[arg-type]
            max_tokens=3,
            extra_body=extra,
        )
    return answer.model_extra or {}


def test_verbose_shows_the_rendered_prompt_and_the_settings(verbose: WorkerProcess) -> None:
    rendered = httpx.post(f"{verbose.url}/apply-template", json={"messages": CHAT}).json()
    detail = _chat(verbose, seed=11)["__verbose"]
    assert isinstance(detail, dict)
    # The template's text, BOS first, as the detokenizer writes it back (the tiny vocabulary's
    # pieces add spaces, as llama-server's detokenizer adds them).
    assert detail["prompt"].startswith("<s>")
    assert "".join(detail["prompt"].split()) == "".join(("<s>" + rendered["prompt"]).split())
    assert detail["generation_settings"]["seed"] == 11
    assert detail["generation_settings"]["n_predict"] == 3
    assert detail["stop"] is True
    assert detail["tokens_predicted"] <= 3
    assert "timings" in detail


def test_a_request_turns_verbose_off_or_on(verbose: WorkerProcess, models_dir: Path) -> None:
    assert "__verbose" not in _chat(verbose, verbose=False)
    with worker(models_dir / "alpha.gguf", "--ctx-size", "512") as plain:
        assert "__verbose" not in _chat(plain)
        assert "__verbose" in _chat(plain, verbose=True)
        text = httpx.post(
            f"{plain.url}/v1/completions", json={"prompt": "hi", "max_tokens": 2, "verbose": True}
        ).json()
        assert text["__verbose"]["prompt"] == "<s> hi"
        assert text["__verbose"]["content"] == text["choices"][0]["text"]
