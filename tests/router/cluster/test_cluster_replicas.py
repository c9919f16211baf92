"""A model with ``replicas = 2`` on a real Ray cluster (docs/scaling.md, "Replicas"): its copies
on two nodes, each conversation kept on its copy, and a node removed mid-traffic while the
other copy answers every request. Loopback only, in a network namespace
(tests/support/remote/ray_cluster.py); every Ray process the module starts is killed by pid.

The head is full by what its agent reports (``CORRAL_NODE_MEMORY_MAX``); nodes ``b`` and ``c``
have room. One cluster and one router for the module.

Needs root for the namespace: skipped otherwise, except in CI (``CI=true``), where that fails.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import openai
import pytest

from tests.support.chat_streams import until
from tests.support.corral_cli import corral
from tests.support.files.bundled_model import bundled_model
from tests.support.remote.ray_cluster import RayCluster, loopback_cluster
from tests.support.replica_turns import busy_first_copy, copies, two_turns
from tests.support.router_process import RouterProcess, running_router

if not os.environ.get("CI"):  # in CI, bootstrap's --dev installs it: its absence fails
    pytest.importorskip("ray", reason="the corral[cluster] extra: scripts/bootstrap.py --dev")

MODEL = "smol"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RayCluster, RouterProcess]]:
    preset = tmp_path_factory.mktemp("models") / "models.ini"  # a path every node sees
    preset.write_text(f"[{MODEL}]\nmodel = {bundled_model()}\nreplicas = 2\n")
    with loopback_cluster(Path(tmp_path_factory.mktemp("r", numbered=True))) as ray:
        ray.add_node("head", {"CORRAL_NODE_MEMORY_MAX": "1M"})
        ray.add_node("b")
        ray.add_node("c")
        ray.wait_for_nodes(3)
        args = ["--cluster", f"ray://{ray.address}", "--models-preset", str(preset)]
        with running_router([*args, "-c", "2048", "-np", "1"]) as router:
            for node in ("b", "c"):
                router.wait_for_log("node ready", node=node, timeout=60)
            body = {"model": MODEL, "prompt": "Hi", "max_tokens": 1}
            assert router.client.post("/v1/completions", json=body).status_code == 200
            loaded = ["loaded"] * 2
            until(lambda: [c["status"] for c in copies(router, MODEL)] == loaded, "both copies")
            yield ray, router


def _client(router: RouterProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{router.url}/v1", api_key="none", max_retries=0)


@pytest.fixture
def client(cluster: tuple[RayCluster, RouterProcess]) -> Iterator[openai.OpenAI]:
    with _client(cluster[1]) as opened:
        yield opened


def test_the_copies_run_on_two_nodes(cluster: tuple[RayCluster, RouterProcess]) -> None:
    _, router = cluster
    assert sorted(c["node"] for c in copies(router, MODEL)) == ["b", "c"]  # never the full head


def test_each_copys_node_shows_in_the_activity_view_and_corral_ps(
    cluster: tuple[RayCluster, RouterProcess],
) -> None:
    _, router = cluster
    nodes = {c["copy"]: c["node"] for c in copies(router, MODEL)}
    models = router.client.get("/activity").raise_for_status().json()["models"]
    (model,) = (m for m in models if m["name"] == MODEL)
    assert {c["copy"]: c["node"] for c in model["replicas"]} == nodes
    ps = corral("ps", "--url", router.url)
    assert ps.returncode == 0, ps.stderr
    lines = [line.split()[:4] for line in ps.stdout.splitlines() if line.startswith("  copy")]
    assert lines == [["copy", str(copy), node, "loaded"] for copy, node in sorted(nodes.items())]


def test_each_conversation_stays_on_its_copy(cluster: tuple[RayCluster, RouterProcess]) -> None:
    _, router = cluster
    assert two_turns(router, MODEL, "bee", {"X-Conversation-Id": "bee"}) > 0.9


def test_a_node_removed_mid_traffic_leaves_the_other_copy_answering_every_request(
    cluster: tuple[RayCluster, RouterProcess], client: openai.OpenAI
) -> None:
    ray, router = cluster
    survivor, lost = (c["node"] for c in copies(router, MODEL))
    with ExitStack() as busy:
        busy_first_copy(router, MODEL, busy)  # so that the stream below goes to copy 1
        stream = client.completions.create(
            model=MODEL, prompt="Twice", max_tokens=1000, stream=True,
            extra_body={"ignore_eos": True},
        )  # fmt: skip
        chunks = iter(stream)
        assert next(chunks).choices
    answers: list[int] = []
    done = threading.Event()

    def traffic() -> None:  # one conversation, on copy 0 (copy 1 is busy as it starts)
        with _client(router) as client:
            while not done.is_set():
                reply = client.chat.completions.with_raw_response.create(
                    model=MODEL,
                    messages=[{"role": "user", "content": "Hi"}],
                    max_tokens=2,
                    extra_headers={"X-Conversation-Id": "keep"},
                )
                answers.append(reply.status_code)

    sender = threading.Thread(target=traffic)
    sender.start()
    try:
        until(lambda: len(answers) >= 2, "traffic on the surviving copy")
        ray.kill_node(lost)
        with pytest.raises(openai.APIError):  # the lost copy's stream: an error, not a hang
            list(chunks)
        seen = len(answers)
        until(lambda: len(answers) >= seen + 2, "traffic after the node's death")
        # The lost copy is loaded again, as the traffic goes on, where there is room: on the
        # surviving node (the head is full).
        again = [("loaded", survivor)] * 2
        until(
            lambda: [(c["status"], c.get("node")) for c in copies(router, MODEL)] == again,
            "the lost copy loaded again",
        )
    finally:
        done.set()
        sender.join(timeout=60)
    assert set(answers) == {200}
    # A conversation whose copy was lost moves to the other one; a new one is answered too.
    for headers in ({"X-Conversation-Id": "bee"}, {}):
        answer = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Hi"}], max_tokens=2,
            extra_headers=headers,
        )  # fmt: skip
        assert answer.choices
