"""Failover on a real Ray cluster (docs/scaling.md, "Failover"): a node that dies mid-stream or
mid-answer, a node that joins after the router started. Loopback only, in a network namespace
(tests/support/remote/ray_cluster.py); every Ray process the module starts is killed by pid.

The head is full by what its agent reports (``CORRAL_NODE_MEMORY_MAX``); nodes ``c`` and ``d``
join after the router started, with room. One cluster and one router for the module.

Needs root for the namespace: skipped otherwise, except in CI (``CI=true``), where that fails.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.remote.ray_cluster import RayCluster, loopback_cluster
from tests.support.router_process import RouterProcess, running_router

if not os.environ.get("CI"):  # in CI, bootstrap's --dev installs it: its absence fails
    pytest.importorskip("ray", reason="the corral[cluster] extra: scripts/bootstrap.py --dev")

# The bound on the next answer for a dead node's model (issue 52, "Done when"), as the
# client's timeout: the load on another node included.
FAILOVER_TIMEOUT = 15.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RayCluster, RouterProcess]]:
    models = tmp_path_factory.mktemp("models")  # a path every node sees: one machine
    write_tiny_gguf(models / "alpha.gguf", name="alpha")
    with loopback_cluster(Path(tmp_path_factory.mktemp("r", numbered=True))) as ray:
        ray.add_node("head", {"CORRAL_NODE_MEMORY_MAX": "1M"})
        ray.wait_for_nodes(1)
        args = ["--cluster", f"ray://{ray.address}", "--models-dir", str(models)]
        with running_router([*args, "--ctx-size", "32768"]) as router:
            router.wait_for_log("node ready", node="head", timeout=60)
            yield ray, router


def _client(router: RouterProcess, timeout: float = 120.0) -> openai.OpenAI:
    # No retries: the first answer after a node's death is the one under test.
    return openai.OpenAI(
        base_url=f"{router.url}/v1", api_key="none", timeout=timeout, max_retries=0
    )


def _hi(router: RouterProcess, timeout: float = 120.0) -> str:
    with _client(router, timeout) as client:  # closed: a socket left open warns later tests
        answer = client.chat.completions.create(
            model="alpha", messages=[{"role": "user", "content": "hi"}], max_tokens=2
        )
    assert answer.choices
    return str(router.models()["alpha"]["node"])


def test_a_node_that_joins_takes_the_next_model(
    cluster: tuple[RayCluster, RouterProcess],
) -> None:
    ray, router = cluster
    ray.add_node("c")
    router.wait_for_log("node ready", node="c", timeout=60)
    assert _hi(router) == "c"  # the full head only had it, had c not been listed


def test_a_dead_nodes_stream_ends_with_an_error_and_its_model_loads_elsewhere(
    cluster: tuple[RayCluster, RouterProcess],
) -> None:
    ray, router = cluster
    assert router.models()["alpha"]["node"] == "c"
    ray.add_node("d")
    router.wait_for_log("node ready", node="d", timeout=60)
    client = _client(router)
    stream = client.chat.completions.create(
        model="alpha",
        messages=[{"role": "user", "content": "hi"}],
        max_tokens=30_000,  # far more than it makes before the node is gone
        stream=True,
        extra_body={"ignore_eos": True},  # the random tiny model may end at any token
        extra_headers={"X-Conversation-Id": "failover"},  # resumable (docs/protocol.md §5)
    )
    with client, stream:
        chunks = iter(stream)
        assert next(chunks).choices
        ray.kill_node("c")
        with pytest.raises(openai.APIError) as ended:  # the SSE error event, not a clean end
            list(chunks)
    assert "alpha" in str(ended.value)
    # The next request loads it on the node left with room, within the bound.
    assert _hi(router, timeout=FAILOVER_TIMEOUT) == "d"
    # Its session lived in the dead worker: a replay answers why, as after a local crash.
    replay = router.client.get("/v1/stream", params={"conv_id": "failover", "from": 0})
    assert replay.status_code == 404
    assert replay.json()["error"]["message"] == "Stream not found: model 'alpha' crashed"


def test_a_dead_nodes_non_streamed_request_ends_with_an_error_answer(
    cluster: tuple[RayCluster, RouterProcess],
) -> None:
    ray, router = cluster
    assert router.models()["alpha"]["node"] == "d"  # where the test before loaded it

    def answer() -> object:
        with _client(router) as client:
            return client.chat.completions.create(
                model="alpha",
                messages=[{"role": "user", "content": "hi"}],
                max_tokens=30_000,  # far more than it makes before the node is gone
                extra_body={"ignore_eos": True},
            )

    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(answer)
        _wait_until_at_its_worker(router, "alpha")
        ray.kill_node("d")
        with pytest.raises(openai.APIStatusError) as ended:  # an answer, not the client's timeout
            pending.result()
    assert ended.value.status_code == 503  # docs/scaling.md, "Failover"
    error = ended.value.response.json()["error"]  # the API's error JSON (docs/api.md)
    assert error["type"] == "unavailable_error"
    assert "alpha" in error["message"]


def _wait_until_at_its_worker(router: RouterProcess, model: str) -> None:
    """Until the live activity view says the request was handed to the model's worker: an
    answer sent whole is in ``prompt`` until it ends (router/observe/requests.py)."""
    with router.client.stream("GET", "/activity/sse", timeout=120) as events:
        for line in events.iter_lines():
            if line.startswith("data: "):
                records = json.loads(line[6:])["requests"]
                if any(r["model"] == model and r["state"] == "prompt" for r in records):
                    return
    raise AssertionError(f"the activity stream ended before a request for {model} was sent on")
