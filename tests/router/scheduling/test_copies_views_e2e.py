"""Every copy of a model with ``replicas = 2`` where workers are shown (docs/scaling.md,
"Replicas"), over real HTTP with real workers: ``/activity``, ``/metrics``, ``corral ps``,
Ollama's ``/api/ps`` (through the official ``ollama`` client) and the router's log. The last
test kills the first copy's worker, so that the copies differ: what showed only the first copy
would say the model is not running while its second copy serves.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import ollama
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.chat_streams import until
from tests.support.corral_cli import corral
from tests.support.replica_turns import copies, two_copies
from tests.support.router_process import RouterProcess

MODEL = "smol"


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    with two_copies(tmp_path_factory.mktemp("views"), MODEL) as process:
        yield process


def _activity_model(router: RouterProcess) -> dict[str, Any]:
    models = router.client.get("/activity").raise_for_status().json()["models"]
    return next(model for model in models if model["name"] == MODEL)


def _samples(router: RouterProcess, name: str) -> dict[str, float]:
    """The samples of the metric ``name`` for MODEL, by label set (its ``copy``, if any)."""
    return {
        sample.labels.get("copy", ""): sample.value
        for family in text_string_to_metric_families(router.client.get("/metrics").text)
        for sample in family.samples
        if sample.name == name and sample.labels.get("model") == MODEL
    }


def test_the_activity_view_lists_each_copy(router: RouterProcess) -> None:
    model = _activity_model(router)
    assert model["status"] == "loaded"
    assert [(c["copy"], c["status"]) for c in model["replicas"]] == [(0, "loaded"), (1, "loaded")]


def test_metrics_count_each_copys_loads_and_the_models_are_their_sum(
    router: RouterProcess,
) -> None:
    assert _samples(router, "corral_replica_loads_total") == {"0": 1, "1": 1}
    assert _samples(router, "corral_model_loads_total") == {"": 2}
    assert _samples(router, "corral_replica_failures_total") == {"0": 0, "1": 0}


def test_ps_shows_a_line_per_copy(router: RouterProcess) -> None:
    ps = corral("ps", "--url", router.url)
    assert ps.returncode == 0, ps.stderr
    lines = [line.split() for line in ps.stdout.splitlines()]
    assert [line[:3] for line in lines if line[0] == "copy"] == [
        ["copy", "0", "loaded"],
        ["copy", "1", "loaded"],
    ]


def test_the_log_names_the_copy_whose_worker_started_and_loaded(router: RouterProcess) -> None:
    for copy in (0, 1):
        router.wait_for_log("starting worker", model=MODEL, copy=copy)
        assert router.wait_for_log("model loaded", model=MODEL, copy=copy)["pid"] > 0


def test_ollama_ps_lists_the_model_once_with_what_all_its_copies_hold(
    router: RouterProcess,
) -> None:
    with ollama.Client(host=router.url, timeout=60) as client:
        running = client.ps().models
    assert [model.name for model in running] == [f"{MODEL}:latest"]
    one_copy = max(c["rss"] for c in copies(router, MODEL))
    assert (running[0].size or 0) > 1.5 * one_copy  # both copies' memory, not the first's


def test_a_crashed_first_copy_leaves_the_model_shown_running_on_its_second(
    router: RouterProcess,
) -> None:
    # Last: the module's first copy is down after it (no request loads it again).
    first = router.wait_for_log("model loaded", model=MODEL, copy=0)["pid"]
    os.kill(first, signal.SIGKILL)
    exited = router.wait_for_log("worker exited", model=MODEL, copy=0)
    assert exited["level"] == "error"
    until(lambda: [c["status"] for c in copies(router, MODEL)] == ["unloaded", "loaded"], "crash")
    model = _activity_model(router)
    assert model["status"] == "loaded"
    assert [c["status"] for c in model["replicas"]] == ["unloaded", "loaded"]
    with ollama.Client(host=router.url, timeout=60) as client:
        assert [model.name for model in client.ps().models] == [f"{MODEL}:latest"]
    assert _samples(router, "corral_replica_failures_total") == {"0": 1, "1": 0}
    ps = corral("ps", "--url", router.url).stdout
    assert f"{MODEL} " in ps
    assert "copies" not in ps  # one copy runs: the model's line alone
