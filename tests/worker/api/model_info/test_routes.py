"""``/metrics``, ``/slots`` and ``/props`` as llama-server answers them, on a real worker."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.support.worker_process import worker

SPEC_FAMILIES = (
    "llamacpp:spec_decode_num_draft_tokens",
    "llamacpp:spec_decode_num_accepted_tokens",
    "llamacpp:spec_decode_num_drafts",
)


def test_metrics_and_slots_only_when_enabled(models_dir: Path) -> None:
    with worker(models_dir / "alpha.gguf", "--no-slots") as child:
        for path in ("/metrics", "/slots"):
            response = httpx.get(f"{child.url}{path}")
            assert response.status_code == 501
            assert response.json()["error"]["type"] == "not_supported_error"
        assert httpx.get(f"{child.url}/props").json()["endpoint_metrics"] is False


def test_metrics_in_llama_servers_names_and_header(models_dir: Path) -> None:
    before = int(time.time())
    with worker(models_dir / "alpha.gguf", "--metrics") as child:
        httpx.post(f"{child.url}/completion", json={"prompt": "hi", "n_predict": 3}, timeout=60)
        response = httpx.get(f"{child.url}/metrics")
    assert response.status_code == 200
    assert before - 5 <= int(response.headers["Process-Start-Time-Unix"]) <= time.time()
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    assert all(families[name].type == "counter" for name in SPEC_FAMILIES)
    assert families["llamacpp:tokens_predicted"].samples[0].value == 3
    assert families["llamacpp:requests_processing"].type == "gauge"


def test_one_token_has_no_generation_rate(models_dir: Path) -> None:
    with worker(models_dir / "alpha.gguf") as child:
        body = httpx.post(
            f"{child.url}/completion", json={"prompt": "hi", "n_predict": 1}, timeout=60
        ).json()
    # The first token comes with the prompt: there is no decode step to time.
    assert body["timings"]["predicted_per_second"] == 0.0
    assert body["timings"]["predicted_per_token_ms"] == 0.0


def test_props_has_llama_servers_fields(models_dir: Path) -> None:
    args = ("--seed", "42", "--parallel", "2", "--ctx-size", "512", "--alias", "b,a")
    tags = ("--tags", "small, chat,,fim")
    with worker(models_dir / "alpha.gguf", *args, *tags) as child:
        props = httpx.get(f"{child.url}/props").json()
        slots = httpx.get(f"{child.url}/slots").json()
        listed = httpx.get(f"{child.url}/v1/models").json()["data"]
        # One entry, by its id or an alias (OpenAI's models.retrieve); another name is a 404.
        entries = [httpx.get(f"{child.url}/v1/models/{name}") for name in ("a", "b", "alpha")]
    assert [(m["id"], m["aliases"]) for m in listed] == [("a", ["a", "b"])]
    assert [entry.json() for entry in entries[:2]] == [listed[0], listed[0]]
    assert entries[2].status_code == 404
    assert entries[2].json()["error"]["message"] == "model 'alpha' not found"
    assert listed[0]["tags"] == ["chat", "fim", "small"]  # llama-server's --tags, a sorted set
    assert props["is_sleeping"] is False
    assert props["default_generation_settings"]["params"]["seed"] == 42
    assert props["default_generation_settings"]["n_ctx"] == 256  # 512 over two slots
    assert (props["endpoint_slots"], props["bos_token"], props["total_slots"]) == (True, "<s>", 2)
    assert [slot["n_ctx"] for slot in slots] == [256, 256]


def test_embeddings_count_as_prompt_work(models_dir: Path) -> None:
    # As llama-server: nothing is sampled, but the prompt was decoded.
    with worker(models_dir / "alpha.gguf", "--metrics", "--embeddings", "--pooling", "mean") as w:
        httpx.post(f"{w.url}/v1/embeddings", json={"input": ["hello world", "the"]}, timeout=60)
        text = httpx.get(f"{w.url}/metrics").text
    families = {f.name: f.samples[0].value for f in text_string_to_metric_families(text)}
    assert families["llamacpp:prompt_tokens"] >= 4
    assert families["llamacpp:n_decode"] == 2
    assert families["llamacpp:tokens_predicted"] == 0


def test_throughput_gauges_cover_the_window_since_the_last_scrape(models_dir: Path) -> None:
    def gauges(url: str) -> dict[str, float]:
        text = httpx.get(f"{url}/metrics").text
        return {f.name: f.samples[0].value for f in text_string_to_metric_families(text)}

    with worker(models_dir / "alpha.gguf", "--metrics") as child:
        httpx.post(f"{child.url}/completion", json={"prompt": "hi", "n_predict": 8}, timeout=60)
        first, second = gauges(child.url), gauges(child.url)
    assert first["llamacpp:predicted_tokens_seconds"] > 0  # the generation since the start
    assert second["llamacpp:predicted_tokens_seconds"] == 0  # nothing since the first scrape
    assert second["llamacpp:tokens_predicted"] == 8  # the counters keep their totals
