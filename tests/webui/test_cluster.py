"""The node of each worker in the Web UI, for a router started with ``--cluster`` (docs/webui.md),
each copy's for a model with replicas.

A real Ray cluster of one node (the head, named ``head``) on loopback, in a network namespace
of its own (tests/support/remote/ray_cluster.py), with the router inside it. The browser must
be started inside it too, to reach the router's loopback: this module's ``browser`` is
conftest's, started only once the cluster is up. That a single box shows no node is checked by
test_models.py and test_activity.py.

Needs root for the namespace: skipped otherwise, except in CI (``CI=true``), where that fails.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.remote.ray_cluster import loopback_cluster
from tests.support.router_process import RouterProcess, running_router
from tests.webui.ui import open_ui

if not os.environ.get("CI"):  # in CI, bootstrap's --dev installs it: its absence fails
    pytest.importorskip("ray", reason="the corral[cluster] extra: scripts/bootstrap.py --dev")


@pytest.fixture(scope="module")
def cluster_router(
    ui_models: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RouterProcess]:
    with loopback_cluster(Path(tmp_path_factory.mktemp("r", numbered=True))) as ray:
        ray.add_node("head")
        ray.wait_for_nodes(1)
        preset = tmp_path_factory.mktemp("preset") / "models.ini"
        preset.write_text("[beta]\nreplicas = 2\n")  # two copies, both on the one node
        args = ["--cluster", f"ray://{ray.address}", "--models-dir", str(ui_models)]
        args += ["--models-preset", str(preset)]
        with running_router([*args, "--ctx-size", "512"]) as router:
            router.wait_for_log("node ready", node="head", timeout=60)
            yield router


@pytest.fixture(scope="module")
def browser(cluster_router: RouterProcess, browser: Browser) -> Browser:
    """conftest's browser, started after (so inside the namespace of) the cluster."""
    return browser


def _chat(router: RouterProcess, model: str) -> None:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    httpx.post(f"{router.url}/v1/chat/completions", json=body, timeout=120).raise_for_status()


def test_the_models_and_activity_pages_show_each_workers_node(
    cluster_router: RouterProcess, page: Page
) -> None:
    _chat(cluster_router, "alpha")
    assert cluster_router.models()["alpha"]["node"] == "head"  # what the pages read
    now = cluster_router.client.get("/activity").raise_for_status().json()["models"]
    assert {m["name"]: m.get("node") for m in now}["alpha"] == "head"
    open_ui(page, cluster_router, "#/models")
    alpha = page.locator(".model-row[data-model=alpha]")
    expect(alpha.locator(".fact-node")).to_have_text("node head")
    # A model with no worker runs on no node.
    expect(page.locator(".model-row[data-model=beta] .fact-node")).to_have_count(0)
    page.get_by_role("link", name="Activity").click()
    expect(page.locator('.activity-models li[data-model="alpha"]')).to_contain_text("node head")
    expect(page.locator('.activity-models li[data-model="beta"]')).not_to_contain_text("node")


def test_each_copy_of_a_model_with_replicas_shows_its_node(
    cluster_router: RouterProcess, page: Page
) -> None:
    body = {"model": "beta", "prompt": "hi", "max_tokens": 2}  # beta has no chat template
    httpx.post(f"{cluster_router.url}/v1/completions", json=body, timeout=120).raise_for_status()
    open_ui(page, cluster_router, "#/models")
    beta = page.locator(".model-row[data-model=beta]")
    expect(beta.locator(".fact-copy")).to_contain_text(
        ["copy 0: loaded · node head", "copy 1: loaded · node head"]
    )
    expect(beta.locator(".fact-node")).to_have_count(0)  # per copy instead
    page.get_by_role("link", name="Activity").click()
    copies = page.locator('.activity-models li[data-model="beta"] .activity-copy')
    expect(copies).to_have_text([" · copy 0 loaded on node head", " · copy 1 loaded on node head"])
