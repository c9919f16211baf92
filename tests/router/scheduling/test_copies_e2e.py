"""A model with ``replicas = 2`` on one box (docs/scaling.md, "Replicas"), over real HTTP with
the ``openai`` client and real inference: both copies load, a request goes to the least busy
copy, and a conversation (its ``X-Conversation-Id``, else its long prompt prefix) stays on the
copy that holds its KV cache, so its second turn reads its first turn's prompt from that cache
(tests/support/replica_turns.py says how a miss would show). With ``replicas-max = 2``, a queue
longer than the model's one slot gets a second copy, which answers it.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.chat_streams import until
from tests.support.corral_cli import corral
from tests.support.replica_turns import (
    busy_first_copy,
    copies,
    two_copies,
    two_turns,
    used_router,
)
from tests.support.router_process import RouterProcess

MODEL = "smol"


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    with two_copies(tmp_path_factory.mktemp("copies"), MODEL) as process:
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


@pytest.fixture(scope="module")
def auto_router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    with used_router(tmp_path_factory.mktemp("auto"), MODEL, "replicas-max = 2", "8192") as process:
        yield process


def test_a_queue_longer_than_the_slots_gets_another_copy_that_answers_it(
    auto_router: RouterProcess,
) -> None:
    assert [c["status"] for c in copies(auto_router, MODEL)] == ["loaded", "unloaded"]

    def hi() -> int:
        with openai.OpenAI(base_url=f"{auto_router.url}/v1", api_key="none") as client:
            reply = client.chat.completions.with_raw_response.create(
                model=MODEL, messages=[{"role": "user", "content": "Hi"}], max_tokens=2
            )
            return reply.status_code

    with ExitStack() as busy, ThreadPoolExecutor(2) as pool:
        busy_first_copy(auto_router, MODEL, busy, tokens=8000)  # the one slot of copy 0
        waiting = [pool.submit(hi) for _ in range(2)]  # two waiting for one slot
        assert [answer.result(timeout=120) for answer in waiting] == [200, 200]
        # Answered while copy 0 still streams: by the copy the queue brought.
        assert [(c["status"], c["in_flight"]) for c in copies(auto_router, MODEL)] == [
            ("loaded", 1),
            ("loaded", 0),
        ]
    auto_router.wait_for_log("loading another copy for the queue", model=MODEL, copy=1)
