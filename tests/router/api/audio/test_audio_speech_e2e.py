"""``POST /v1/audio/speech`` through the official ``openai`` client: ``corral serve`` and a worker
alone both refuse it with a 501 and OpenAI's error JSON naming why (docs/api.md), and the router
loads no model to say so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from corral.http.worker_routes import SPEECH_REFUSAL
from tests.support.router_process import RouterProcess
from tests.support.worker_process import worker

REFUSED = {"code": 501, "message": SPEECH_REFUSAL, "type": "not_supported_error"}


@pytest.fixture(scope="module")
def worker_url(models_dir: Path) -> Iterator[str]:
    with worker(models_dir / "alpha.gguf") as child:
        yield child.url


def _refusal(base_url: str, model: str) -> openai.APIStatusError:
    with (
        openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0) as client,
        pytest.raises(openai.APIStatusError) as raised,
    ):
        client.audio.speech.create(model=model, voice="alloy", input="Hello there")
    return raised.value


@pytest.mark.parametrize("model", ["alpha", "tts-1"])
def test_corral_serve_refuses_speech_without_loading_a_model(
    shared_router: RouterProcess, model: str
) -> None:
    refused = _refusal(shared_router.url + "/v1", model)
    assert refused.status_code == 501
    assert refused.body == REFUSED
    listed = {m["id"]: m for m in shared_router.client.get("/models").json()["data"]}
    assert listed["alpha"]["status"]["value"] == "unloaded"


def test_a_worker_refuses_speech_in_the_same_words(worker_url: str) -> None:
    refused = _refusal(worker_url + "/v1", "alpha")
    assert refused.status_code == 501
    assert refused.body == REFUSED
