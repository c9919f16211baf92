"""Models in the Web UI: the picker's live statuses, loading, failures, the model manager,
downloads from a hub with their progress, cancel, and deletion."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.support.fakes.fake_hub import FakeHub, HubFile
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.router_process import RouterProcess, running_router
from tests.webui.conftest import DESKTOP, PHONE, Shot
from tests.webui.ui import last_reply, open_ui, send_message, set_chat_settings

REPO = "acme/tiny-GGUF"
Q4 = f"{REPO}:Q4_K_M"
PARTIAL = re.compile(r"^[1-9]\d?$")  # 1..99 percent


def _format_bytes(size: int) -> str:
    """As the page's formatBytes: decimal units, one decimal below 100."""
    value, unit = float(size), 0
    units = ["B", "KB", "MB", "GB", "TB"]
    while value >= 1000 and unit < len(units) - 1:
        value /= 1000
        unit += 1
    digits = 0 if unit == 0 or value >= 100 else 1
    return f"{value:.{digits}f} {units[unit]}"


def _picker_status(page: Page) -> str | None:
    return page.locator(".picker-button .badge").get_attribute("data-status")


def test_switching_to_an_unloaded_model_loads_it_with_progress(
    ui_models: Path, page: Page, shot: Shot
) -> None:
    # Upstream's debug aid holds every load for 2 s, so the "loading" state is there to see.
    args = ["--models-dir", str(ui_models), "--ctx-size", "512"]
    with running_router(args, env={"LLAMA_SERVER_DEBUG_FAKE_TIMING": "1"}) as router:
        open_ui(page, router)
        picker = page.locator(".picker-button")
        expect(picker).to_contain_text("alpha")
        picker.click()
        beta = page.get_by_role("option", name=re.compile(r"^beta"))
        expect(beta.locator(".badge")).to_have_attribute("data-status", "unloaded")
        shot("picker")
        beta.click()
        expect(picker).to_contain_text("beta")
        badge = picker.locator(".badge")
        expect(badge).to_have_attribute("data-status", "loading")
        expect(page.get_by_role("progressbar", name="Loading beta").first).to_be_visible()
        shot("loading")
        expect(badge).to_have_attribute("data-status", "loaded")
        assert router.models()["beta"]["status"]["value"] == "loaded"
        picker.click()
        expect(beta.locator(".badge")).to_have_attribute("data-status", "loaded")
        shot("loaded")

        # A model that cannot load says why, in the picker and above the chat.
        page.get_by_role("option", name=re.compile(r"^broken")).click()
        banner = page.locator(".banner-error")
        expect(banner).to_contain_text("broken failed")
        expect(banner).to_contain_text("exit code")
        expect(badge).to_have_attribute("data-status", "unloaded")
        expect(badge).to_have_text("failed")
        error = router.models()["broken"]["status"]["error"]
        assert error
        expect(banner).to_contain_text(error)  # the worker's own reason, not a generic one
        shot("failed")


def test_a_conversation_whose_model_is_gone_says_so(
    ui_models: Path, tmp_path: Path, page: Page, shot: Shot
) -> None:
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(ui_models / "alpha.gguf", models / "gamma.gguf")
    write_tiny_gguf(models / "delta.gguf", name="delta", seed=3)
    with running_router(["--models-dir", str(models), "--ctx-size", "512"]) as router:
        open_ui(page, router)
        page.locator(".picker-button").click()
        page.get_by_role("option", name=re.compile(r"^gamma")).click()
        set_chat_settings(page, max_tokens=8)
        send_message(page, "hi")
        expect(last_reply(page)).to_have_attribute("data-state", "done")

        (models / "gamma.gguf").unlink()
        router.client.get("/models", params={"reload": 1}).raise_for_status()
        banner = page.locator(".banner-warn")
        expect(banner).to_contain_text("“gamma” is no longer available")
        expect(page.get_by_role("button", name="Send (Enter)")).to_be_disabled()
        expect(page.locator(".conv-item .conv-missing")).to_have_text("gamma (gone)")
        shot("model-gone")

        # Choosing another model lets the conversation go on.
        page.locator(".picker-button").click()
        page.get_by_role("option", name=re.compile(r"^delta")).click()
        expect(banner).to_have_count(0)
        send_message(page, "still there?")
        expect(last_reply(page)).to_have_attribute("data-state", "done")
        expect(last_reply(page).locator(".msg-head")).to_have_text("delta")


@contextmanager
def _preset_router(ui_models: Path, folder: Path, text: str) -> Iterator[RouterProcess]:
    """A router of the UI's models with the preset ``text``."""
    preset = folder / "models.ini"
    preset.write_text(text)
    args = ["--models-dir", str(ui_models), "--models-preset", str(preset), "--ctx-size", "512"]
    with running_router(args) as router:
        yield router


def test_manager_loads_unloads_and_shows_memory_pins_and_ttls(
    ui_models: Path, tmp_path: Path, page: Page, shot: Shot
) -> None:
    text = "[alpha]\npin = on\n\n[beta]\nttl = 600\n"
    with _preset_router(ui_models, tmp_path, text) as router:
        open_ui(page, router, "#/models")
        alpha = page.locator(".model-row[data-model=alpha]")
        beta = page.locator(".model-row[data-model=beta]")
        expect(alpha.locator(".fact-pin")).to_have_text("pinned")
        expect(beta.locator(".fact-ttl")).to_have_text("TTL 10 min")
        expect(beta.locator(".badge")).to_have_attribute("data-status", "unloaded")
        # The size of its files shows before any load (the router's "size").
        size = (ui_models / "beta.gguf").stat().st_size
        assert router.models()["beta"]["size"] == size
        expect(beta.locator(".fact-size")).to_have_text(_format_bytes(size))
        expect(beta.locator(".fact-memory-last")).to_have_count(0)

        beta.get_by_role("button", name="Load").click()
        expect(beta.locator(".badge")).to_have_attribute("data-status", "loaded")
        expect(beta.locator(".fact-memory")).to_contain_text("MB RAM")
        expect(beta.locator(".fact-node")).to_have_count(0)  # a single box: no node (--cluster)
        expect(page.locator(".manager-summary")).to_contain_text("1 running")
        expect(page.locator('.nav-item[href="#/models"]')).to_contain_text("1 running")
        shot("loaded")

        page.set_viewport_size(PHONE)
        page.emulate_media(color_scheme="dark")
        shot("phone-dark")
        page.set_viewport_size(DESKTOP)
        page.emulate_media(color_scheme="light")

        beta.get_by_role("button", name="Unload").click()
        expect(beta.locator(".badge")).to_have_attribute("data-status", "unloaded")
        expect(beta.locator(".fact-memory")).to_have_count(0)
        assert router.models()["beta"]["status"]["value"] == "unloaded"
        # Unloaded, it keeps its size and what it held when it ran.
        expect(beta.locator(".fact-size")).to_have_text(_format_bytes(size))
        expect(beta.locator(".fact-memory-last")).to_contain_text("MB RAM when run")
        shot("unloaded")

        # "Chat" opens a new chat with that model.
        alpha.get_by_role("button", name="Chat").click()
        expect(page.locator(".picker-button")).to_contain_text("alpha")
        expect(page.locator(".empty h1")).to_have_text("Chat with alpha")


def test_the_models_and_activity_pages_show_each_copy_of_a_model_with_replicas(
    ui_models: Path, tmp_path: Path, page: Page, shot: Shot
) -> None:
    with _preset_router(ui_models, tmp_path, "[alpha]\nreplicas = 2\n") as router:
        body = {"model": "alpha", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
        router.client.post("/v1/chat/completions", json=body).raise_for_status()
        open_ui(page, router, "#/models")
        copies = page.locator(".model-row[data-model=alpha] .fact-copy")
        expect(copies).to_contain_text(["copy 0: loaded", "copy 1: loaded"])  # the second loads too
        expect(page.locator(".model-row[data-model=beta] .fact-copy")).to_have_count(0)
        shot("copies")
        page.get_by_role("link", name="Activity").click()
        alpha = page.locator('.activity-models li[data-model="alpha"] .activity-copy')
        expect(alpha).to_have_text([" · copy 0 loaded", " · copy 1 loaded"])
        expect(page.locator('.activity-models li[data-model="beta"] .activity-copy')).to_have_count(
            0
        )


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    with FakeHub() as fake:
        yield fake


@pytest.fixture
def hub_router(ui_models: Path, hub: FakeHub, tmp_path: Path) -> Iterator[RouterProcess]:
    env = {
        "HF_HUB_CACHE": str(tmp_path / "hub-cache"),
        "HF_ENDPOINT": hub.url,
        "HF_HOME": str(tmp_path / "hf"),  # never a developer's real token or settings
    }
    args = ["--models-dir", str(ui_models), "--ctx-size", "512"]
    with running_router(args, env) as router:
        yield router


def test_download_with_progress_then_chat_and_delete(
    hub: FakeHub, hub_router: RouterProcess, page: Page, tmp_path: Path, shot: Shot
) -> None:
    payload = write_tiny_gguf(tmp_path / "tiny.gguf", seed=5).read_bytes()
    hub.add_repo(REPO, {"tiny-Q4_K_M.gguf": HubFile(payload, pause_after=64 * 1024)})
    open_ui(page, hub_router, "#/models")
    page.get_by_role("textbox", name="Hugging Face repository").fill(REPO)
    page.get_by_role("button", name="Download").click()

    row = page.locator(f".download[data-model='{REPO}']")
    bar = row.get_by_role("progressbar")
    expect(bar).to_have_attribute("aria-valuenow", PARTIAL)  # paused part way by the hub
    expect(row).to_contain_text("of")
    shot("partial")
    hub.release()
    expect(bar).to_have_attribute("aria-valuenow", "100")
    expect(row).to_contain_text(f"done: {Q4}")
    model = page.locator(f".model-row[data-model='{Q4}']")
    expect(model).to_be_visible()
    expect(model.locator(".fact").first).to_have_text("hub cache")
    expect(model.locator(".fact-size")).to_have_text(_format_bytes(len(payload)))
    shot("done")

    # The new model chats.
    row.get_by_role("button", name="Chat").click()
    expect(page.locator(".picker-button")).to_contain_text(Q4)
    set_chat_settings(page, max_tokens=8)
    send_message(page, "hello")
    expect(last_reply(page)).to_have_attribute("data-state", "done")

    # Deleting asks first, then the model and its files go.
    page.goto(f"{hub_router.url}/#/models")
    model.get_by_role("button", name=f"Delete {Q4}").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text(f"Delete {Q4}?")
    shot("confirm-delete")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_have_count(0)
    expect(model).to_be_visible()
    model.get_by_role("button", name=f"Delete {Q4}").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(model).to_have_count(0)
    assert Q4 not in hub_router.models()
    assert not (tmp_path / "hub-cache" / "models--acme--tiny-GGUF").exists()
    shot("deleted")


def test_a_download_can_be_cancelled_and_failures_are_shown(
    hub: FakeHub, hub_router: RouterProcess, page: Page, tmp_path: Path, shot: Shot
) -> None:
    payload = write_tiny_gguf(tmp_path / "tiny.gguf", seed=6).read_bytes()
    hub.add_repo(REPO, {"tiny-Q8_0.gguf": HubFile(payload, pause_after=32 * 1024)})
    open_ui(page, hub_router, "#/models")
    repo_input = page.get_by_role("textbox", name="Hugging Face repository")
    repo_input.fill(f"{REPO}:Q8_0")
    page.get_by_role("button", name="Download").click()
    row = page.locator(f".download[data-model='{REPO}:Q8_0']")
    expect(row.get_by_role("progressbar")).to_have_attribute("aria-valuenow", PARTIAL)
    row.get_by_role("button", name="Cancel").click()
    expect(row).to_have_count(0)
    assert f"{REPO}:Q8_0" not in hub_router.models()

    # A repository the hub does not have fails with the reason.
    repo_input.fill("acme/missing-GGUF")
    page.get_by_role("button", name="Download").click()
    failed = page.locator(".download[data-model='acme/missing-GGUF']")
    expect(failed).to_have_class(re.compile(r"download-failed"))
    expect(failed.locator(".form-error")).not_to_be_empty()
    shot("failed")
    failed.get_by_role("button", name="Dismiss").click()
    expect(failed).to_have_count(0)

    # A failed download can be tried again: once the hub has the repository, it completes.
    repo_input.fill("acme/late-GGUF")
    page.get_by_role("button", name="Download").click()
    late = page.locator(".download[data-model='acme/late-GGUF']")
    expect(late).to_have_class(re.compile(r"download-failed"))
    expect(late.get_by_role("button", name="Retry")).to_be_visible()
    shot("retry-offered")
    hub.add_repo("acme/late-GGUF", {"late-Q4_K_M.gguf": HubFile(payload)})
    late.get_by_role("button", name="Retry").click()
    expect(late).to_contain_text("done: acme/late-GGUF:Q4_K_M")
    expect(late.get_by_role("button", name="Retry")).to_have_count(0)
    expect(page.locator(".model-row[data-model='acme/late-GGUF:Q4_K_M']")).to_be_visible()
    shot("retried")

    # A malformed id is refused before anything is sent.
    repo_input.fill("not a repo")
    page.get_by_role("button", name="Download").click()
    expect(page.locator(".download-form + .form-error")).to_contain_text("org/repo")
