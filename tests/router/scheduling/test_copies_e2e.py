"""A model with ``replicas = 2`` on one box (docs/scaling.md, "Replicas"), over real HTTP with
the ``openai`` client and real inference: both copies load, a request goes to the least busy
copy, and a conversation (its ``X-Conversation-Id``, else its long prompt prefix) stays on the
copy that holds its KV cache, so its second turn reads its first turn's prompt from that cache
(tests/support/replica_turns.py says how a miss would show).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.chat_streams import until
from tests.support.corral_cli import corral
from tests.support.files.bundled_model import bundled_model
from tests.support.replica_turns import copies, two_turns
from tests.support.router_process import RouterProcess, running_router

MODEL = "smol"


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    preset = tmp_path_factory.mktemp("copies") / "models.ini"
    preset.write_text(f"[{MODEL}]\nmodel = {bundled_model()}\nreplicas = 2\n")
    with running_router(["--models-preset", str(preset), "-c", "2048", "-np", "1"]) as process:
        body = {"model": MODEL, "prompt": "Hi", "max_tokens": 1}
        assert process.client.post("/v1/completions", json=body).status_code == 200
        loaded = ["loaded"] * 2
        until(lambda: [c["status"] for c in copies(process, MODEL)] == loaded, "both copies")
        yield process


def test_both_copies_load_and_are_listed(router: RouterProcess) -> None:
    entry = router.models()[MODEL]
    assert entry["status"]["value"] == "loaded"
    assert [c["copy"] for c in entry["replicas"]] == [0, 1]
    assert "replicas = 2" in entry["status"]["preset"]


def test_a_conversation_id_keeps_its_second_turn_on_its_copy(router: RouterProcess) -> None:
    assert two_turns(router, MODEL, "bee", {"X-Conversation-Id": "bee"}) > 0.9


def test_a_long_prompt_prefix_keeps_its_second_turn_on_its_copy(router: RouterProcess) -> None:
    assert two_turns(router, MODEL, "cat", {}) > 0.9


def test_ps_counts_the_copies_and_metrics_show_each(router: RouterProcess) -> None:
    ps = corral("ps", "--url", router.url)
    assert ps.returncode == 0, ps.stderr
    assert f"{MODEL} (2 copies)" in ps.stdout
    metrics = router.client.get("/metrics").text
    per_copy = {
        sample.labels["copy"]: sample.value
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
        if sample.name == "corral_replica_active_requests" and sample.labels["model"] == MODEL
    }
    assert per_copy == {"0": 0, "1": 0}


def test_unloading_the_model_stops_every_copy(router: RouterProcess) -> None:
    # Last: the module's router has no copy running after it.
    response = router.client.post("/models/unload", json={"model": MODEL})
    assert response.status_code == 200, response.text
    gone = ["unloaded"] * 2
    until(lambda: [c["status"] for c in copies(router, MODEL)] == gone, "both copies stopped")
