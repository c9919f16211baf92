"""Vertex AI's /predict (worker.api.vertex.routes), on a real worker with AIP_MODE=PREDICTION."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.worker_process import worker
from worker.api.vertex.routes import request_format


@pytest.mark.parametrize(
    ("path", "alias"),
    [
        ("/v1/chat/completions", "chatCompletions"),
        ("/apply-template", "applyTemplate"),
        ("/completion", "completion"),
        ("/v1/messages/count_tokens", "messagesCountTokens"),
    ],
)
def test_routes_are_named_in_camel_case(path: str, alias: str) -> None:
    assert request_format(path) == alias


def test_each_instance_is_answered_by_its_route_in_order(models_dir: Path) -> None:
    chat = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "stream": True}
    instances = [
        {"@requestFormat": "chatCompletions", **chat},
        {"@requestFormat": "/completion", "prompt": "x", "n_predict": 2},
        {"@requestFormat": "nope"},
        5,
    ]
    with worker(models_dir / "alpha.gguf", env={"AIP_MODE": "PREDICTION"}) as child:
        body = httpx.post(f"{child.url}/predict", json={"instances": instances}, timeout=60)
        refused = httpx.post(f"{child.url}/predict", json={"instances": "x"}, timeout=60)
    predictions = body.json()["predictions"]
    assert predictions[0]["choices"][0]["message"]["role"] == "assistant"  # whole, not streamed
    assert predictions[1]["tokens_predicted"] == 2
    assert "@requestFormat: nope" in predictions[2]["error"]["message"]
    assert "JSON object" in predictions[3]["error"]["message"]
    assert refused.status_code == 400


def test_without_aip_mode_there_is_no_predict_route(models_dir: Path) -> None:
    with worker(models_dir / "alpha.gguf") as child:
        assert httpx.post(f"{child.url}/predict", json={"instances": []}).status_code == 404
