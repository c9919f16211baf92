"""The router's ``/metrics`` parses as Prometheus text and moves when requests are served."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.support.router_process import RouterProcess, running_router

CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}


def _samples(router: RouterProcess) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = router.client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def test_metrics_move_when_requests_are_served(router: RouterProcess) -> None:
    before = _samples(router)
    alpha = frozenset({("model", "alpha")})
    assert before[("corral_model_status", alpha | {("status", "unloaded")})] == 1
    assert before[("corral_model_loads_total", alpha)] == 0

    assert router.client.post("/v1/chat/completions", json={"model": "alpha", **CHAT}).is_success
    assert (
        router.client.post("/v1/chat/completions", json={"model": "nope", **CHAT}).status_code
        == 404
    )

    after = _samples(router)
    assert after[("corral_model_status", alpha | {("status", "loaded")})] == 1
    assert after[("corral_model_status", alpha | {("status", "unloaded")})] == 0
    assert after[("corral_model_loads_total", alpha)] == 1
    assert after[("corral_model_load_seconds_total", alpha)] > 0
    assert after[("corral_queue_waits_total", frozenset())] == 1
    route = "/v1/chat/completions"
    assert after[("corral_requests_total", frozenset({("route", route), ("status", "200")}))] == 1
    assert after[("corral_requests_total", frozenset({("route", route), ("status", "404")}))] == 1
    assert after[("corral_active_requests", alpha)] == 0


def test_model_metrics_are_proxied_to_the_worker(models_dir: Path) -> None:
    # As llama-server's children, a worker answers /metrics only with --metrics (else 501).
    with running_router(["--models-dir", str(models_dir), "--metrics"]) as router:
        response = router.client.get("/metrics", params={"model": "alpha"})
    assert response.status_code == 200
    names = {family.name for family in text_string_to_metric_families(response.text)}
    assert "llamacpp:tokens_predicted" in names  # the parser drops the _total suffix
