"""The activity view (#/activity) while requests for two models run with ``--models-max 1``:
the requests with their live states, then the swap on the model timeline (issue 39)."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect

from tests.support.router_process import RouterProcess, running_router
from tests.webui.conftest import ARTIFACTS, Shot
from tests.webui.ui import open_ui

SCREENSHOT = ARTIFACTS / "activity.png"  # docs/images/webui-activity.png is a copy of it


def _chat(router: RouterProcess, model: str) -> None:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 16,
        "stream": True,
    }
    with httpx.stream(
        "POST", f"{router.url}/v1/chat/completions", json=body, timeout=120
    ) as answer:
        assert answer.status_code == 200
        for _ in answer.iter_lines():
            pass


def _row(page: Page, model: str, *states: str) -> str:
    return ", ".join(f'tr[data-model="{model}"][data-state="{state}"]' for state in states)


def test_the_activity_view_shows_requests_their_states_and_a_swap(
    ui_models: Path, page: Page, shot: Shot
) -> None:
    # Upstream's debug aid holds every load for 2 s, so the waiting states are there to see.
    args = ["--models-dir", str(ui_models), "--ctx-size", "512", "--models-max", "1"]
    with running_router(args, env={"LLAMA_SERVER_DEBUG_FAKE_TIMING": "1"}) as router:
        open_ui(page, router, "#/activity")
        expect(page.locator(".activity-state")).to_have_text("live")
        expect(page.get_by_role("link", name="Activity")).to_have_attribute("aria-current", "page")
        alpha = threading.Thread(target=_chat, args=(router, "alpha"))
        alpha.start()
        expect(page.locator(_row(page, "alpha", "loading"))).to_have_count(1)
        beta = threading.Thread(target=_chat, args=(router, "beta"))
        beta.start()
        # beta waits: for alpha's request to end (one model at a time), then for its own load.
        expect(page.locator(_row(page, "beta", "queued", "loading"))).to_have_count(1)
        shot("waiting")
        alpha.join()
        beta.join()
        expect(page.locator(_row(page, "alpha", "done"))).to_have_count(1)
        expect(page.locator(_row(page, "beta", "done"))).to_have_count(1)
        # The swap: alpha evicted for beta, on the timeline and in its list of events.
        events = page.locator(".activity-events")
        expect(events.locator('li[data-model="alpha"][data-kind="evicted"]')).to_have_count(1)
        expect(events.locator('li[data-model="beta"][data-kind="loaded"]')).to_have_count(1)
        expect(page.locator(".plot-mark-evicted")).to_have_count(1)
        expect(page.get_by_role("img", name="Tokens/s per model")).to_be_visible()
        expect(page.locator('.activity-models li[data-model="beta"]')).to_contain_text("loaded")
        shot("swapped")
        page.set_viewport_size({"width": 1280, "height": 1200})  # the whole view, plots too
        expect(page.get_by_role("img", name="Memory per device (used)")).to_be_in_viewport()
        page.screenshot(path=SCREENSHOT)
