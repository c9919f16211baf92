"""``corral serve --cluster`` on a real Ray cluster: a head and two nodes on this machine, in a
network namespace with only loopback (tests/support/remote/ray_cluster.py, docs/scaling.md).

The head and node ``b`` are full by what their agents report (``CORRAL_NODE_MEMORY_MAX`` in
their ``ray start``'s environment); node ``c`` has room, so every model loads there. One
cluster and one router for the module: few requests, each test reads what it needs.

Needs root for the namespace: skipped otherwise, except in CI (``CI=true``), where that fails.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.files.bundled_model import bundled_model
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.remote.ray_cluster import loopback_cluster
from tests.support.router_process import RouterProcess, running_router

if not os.environ.get("CI"):  # in CI, bootstrap's --dev installs it: its absence fails
    pytest.importorskip("ray", reason="the corral[cluster] extra: scripts/bootstrap.py --dev")

SMOL = "SmolLM2-135M-Instruct.Q4_1"


@pytest.fixture(scope="module")
def cluster_router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    models = tmp_path_factory.mktemp("models")  # a path every node sees: one machine
    shutil.copy(bundled_model(), models / f"{SMOL}.gguf")
    write_tiny_gguf(models / "alpha.gguf", name="alpha")
    scratch = Path(tmp_path_factory.mktemp("r", numbered=True))
    with loopback_cluster(scratch) as cluster:
        full = {"CORRAL_NODE_MEMORY_MAX": "1M"}
        cluster.add_node("head", full)
        cluster.add_node("b", full)
        cluster.add_node("c")
        cluster.wait_for_nodes(3)
        args = ["--cluster", f"ray://{cluster.address}", "--models-dir", str(models)]
        with running_router([*args, "--ctx-size", "512"]) as router:
            router.wait_for_log("node ready", node="c", timeout=60)
            yield router
        # SIGTERM is still uvicorn's graceful stop with Ray joined (which then re-raises it, as
        # for any router): the workers on the nodes were stopped through their agents first.
        assert router.process.returncode == -signal.SIGTERM, router.log_text()
        assert router.wait_for_log("worker exited", model=SMOL)["reason"] == "exited with code 0"


def _models(router: RouterProcess) -> dict[str, dict[str, Any]]:
    response = router.client.get("/models")
    assert response.status_code == 200
    return {entry["id"]: entry for entry in response.json()["data"]}


def test_a_chat_is_answered_by_a_worker_on_the_node_with_room(
    cluster_router: RouterProcess,
) -> None:
    with openai.OpenAI(base_url=f"{cluster_router.url}/v1", api_key="none") as client:
        answer = client.chat.completions.create(
            model=SMOL, messages=[{"role": "user", "content": "Say hi."}], max_tokens=8
        )
    assert answer.choices[0].message.content
    entry = _models(cluster_router)[SMOL]
    assert entry["status"]["value"] == "loaded"
    assert entry["node"] == "c"  # not the full head nor the full b


def test_a_second_model_goes_to_the_node_with_room_too(cluster_router: RouterProcess) -> None:
    response = cluster_router.client.post("/models/load", json={"model": "alpha"})
    assert response.status_code == 200, response.text
    cluster_router.wait_for_log("model loaded", model="alpha", timeout=120)
    assert _models(cluster_router)["alpha"]["node"] == "c"


def test_ps_and_metrics_show_each_workers_node(cluster_router: RouterProcess) -> None:
    with openai.OpenAI(base_url=f"{cluster_router.url}/v1", api_key="none") as client:
        client.chat.completions.create(
            model=SMOL, messages=[{"role": "user", "content": "Hi"}], max_tokens=2
        )
    ps = subprocess.run(
        [sys.executable, "-m", "router", "ps", "--url", cluster_router.url],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    header, *rows = ps.stdout.splitlines()
    assert header.split()[:3] == ["MODEL", "NODE", "STATUS"]
    assert any(row.split()[:2] == [SMOL, "c"] for row in rows)
    metrics = cluster_router.client.get("/metrics")
    nodes = {
        sample.labels["model"]: sample.labels["node"]
        for family in text_string_to_metric_families(metrics.text)
        for sample in family.samples
        if sample.name == "corral_model_node"
    }
    assert nodes[SMOL] == "c"
