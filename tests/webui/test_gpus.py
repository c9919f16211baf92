"""GPUs in the model manager: each device's memory from the router's inventory, and each running
model's VRAM next to its RAM.

The router runs with its fake inventory (``CORRAL_FAKE_DEVICES``, a test seam) and the model on
the CPU, since this machine has no GPU. So no worker here reports GPU bytes: the page's answer
from ``/v1/models`` gets, for the loaded model, the ``memory.vram``/``memory.devices`` a worker on
a GPU build reports (the router's side of them: tests/router/capacity/test_models_devices.py). What
is under test is how the page shows them.
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, Route, expect

from tests.support.router_process import running_router
from tests.webui.conftest import Shot
from tests.webui.ui import open_ui

G = 1 << 30
FAKE_DEVICES = "CUDA0=20GiB/24GiB,CUDA1=8GiB/8GiB"


def _with_vram(route: Route) -> None:
    response = route.fetch()
    body = response.json()
    for entry in body["data"]:
        if entry["id"] == "beta" and entry["status"]["value"] == "loaded":
            entry["memory"] |= {"vram": 9 * G, "devices": {"CUDA0": 9 * G}}
    route.fulfill(response=response, json=body)


def test_the_manager_shows_each_gpus_memory_and_each_models_vram(
    ui_models: Path, page: Page, shot: Shot
) -> None:
    args = ["--models-dir", str(ui_models), "--ctx-size", "512", "--n-gpu-layers", "0"]
    with running_router(args, env={"CORRAL_FAKE_DEVICES": FAKE_DEVICES}) as router:
        page.route("**/v1/models", _with_vram)
        open_ui(page, router, "#/models")
        gpus = page.get_by_role("list", name="GPUs").get_by_role("listitem")
        expect(gpus).to_have_count(2)
        expect(gpus.nth(0)).to_contain_text("CUDA0")
        expect(gpus.nth(0)).to_contain_text("4.3 GB of 25.8 GB used · 21.5 GB free")
        expect(gpus.nth(1)).to_contain_text("0 B of 8.6 GB used · 8.6 GB free")
        meter = page.get_by_role("meter", name="CUDA0 memory used")
        assert meter.evaluate("m => [m.value, m.max]") == [4 * G, 24 * G]

        beta = page.locator(".model-row[data-model=beta]")
        expect(beta.locator(".fact-vram")).to_have_count(0)
        beta.get_by_role("button", name="Load").click()
        expect(beta.locator(".badge")).to_have_attribute("data-status", "loaded")
        expect(beta.locator(".fact-memory")).to_contain_text("MB RAM")
        expect(beta.locator(".fact-vram")).to_have_text("9.7 GB VRAM")
        expect(beta.locator(".fact-vram")).to_have_attribute(
            "title", "GPU memory its worker holds (CUDA0: 9.7 GB)"
        )
        shot("gpus")


def test_without_gpus_the_manager_shows_no_gpu_list(ui_models: Path, page: Page) -> None:
    with running_router(["--models-dir", str(ui_models), "--ctx-size", "512"]) as router:
        open_ui(page, router, "#/models")
        expect(page.locator(".model-row[data-model=beta]")).to_be_visible()
        expect(page.get_by_role("list", name="GPUs")).to_be_hidden()
