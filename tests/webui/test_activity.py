"""The activity view (#/activity) while requests for two models run with ``--models-max 1``:
the requests with their live states, then the swap on the model timeline (issue 39).

And the Web UI fits from a phone to a wide screen, with live figures that agree (issue 54): at
390, 1400 and 1920 px the chat, models and Activity pages have no horizontal overflow with a
long model name served, and while a model generates the Activity page's tokens/s is the rate
the request finally reports, within 10 %."""

from __future__ import annotations

import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, ViewportSize, expect

from tests.support.files.bundled_model import bundled_model
from tests.support.router_process import RouterProcess, running_router
from tests.webui.conftest import ARTIFACTS, Shot
from tests.webui.ui import open_ui

SCREENSHOT = ARTIFACTS / "activity.png"  # docs/images/webui-activity.png is a copy of it
# The bundled model under a name as long as a hub file's can be.
LONG_NAME = "SmolLM2-135M-Instruct-a-model-name-as-long-as-hub-files-get.Q4_1"
WIDTHS = (390, 1400, 1920)
PAGES = {"chat": "#/", "models": "#/models", "activity": "#/activity"}
GENERATED = 1500  # tokens the measured generation makes (it ignores its end of sequence)

# Every scrolling box (the page, a pane, a table's wrapper) whose content is wider than it is,
# with its class and both widths; an empty list is a page that fits.
OVERFLOWS = """() => {
    const wide = [];
    const root = document.documentElement;
    if (root.scrollWidth > root.clientWidth)
        wide.push(["html", root.scrollWidth, root.clientWidth]);
    for (const el of document.querySelectorAll("body *")) {
        const x = getComputedStyle(el).overflowX;
        if ((x === "auto" || x === "scroll") && el.scrollWidth > el.clientWidth + 1)
            wide.push([el.className, el.scrollWidth, el.clientWidth]);
    }
    return wide;
}"""
# Keeps [generated, tokens/s] each time the generating row of the model shows new figures.
WATCH = """(model) => {
    window.liveRates = [];
    new MutationObserver(() => {
        const row = document.querySelector(`tr[data-state="generating"][data-model="${model}"]`);
        const cell = (name) => Number(row?.querySelector(`td.${name}`)?.textContent || NaN);
        const figures = [cell("col-generated"), cell("col-speed")];
        const last = window.liveRates.at(-1);
        if (figures.every((v) => v > 0) && figures[0] !== last?.[0]) window.liveRates.push(figures);
    }).observe(document.querySelector(".activity-table tbody"), { childList: true, subtree: true });
}"""


# The evicted mark's fill and the models' line colours, all as computed rgb() strings.
MARK_AND_MODEL_COLOURS = """async () => {
    const { colourOf } = await import("./assets/js/views/plots.js");
    const mark = getComputedStyle(document.querySelector(".plot-lanes .plot-mark-evicted")).fill;
    const probe = document.body.appendChild(document.createElement("span"));
    const models = [...Array(7).keys()].map((i) => {
        probe.style.color = colourOf(i);
        return getComputedStyle(probe).color;
    });
    probe.remove();
    return { mark, models };
}"""


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
        expect(page.locator(".plot-lanes .plot-mark-evicted")).to_have_count(1)
        # The marks have a key, and an eviction's colour is no model's.
        expect(page.get_by_role("list", name="Timeline marks")).to_contain_text("evicted")
        colours = page.evaluate(MARK_AND_MODEL_COLOURS)
        assert colours["mark"] not in colours["models"]
        expect(page.get_by_role("img", name="Tokens/s per model")).to_be_visible()
        expect(page.locator('.activity-models li[data-model="beta"]')).to_contain_text("loaded")
        # A single box names no node (test_cluster.py: a cluster's router does).
        expect(page.locator('.activity-models li[data-model="beta"]')).not_to_contain_text("node")
        shot("swapped")
        page.set_viewport_size({"width": 1280, "height": 1200})  # the whole view, plots too
        expect(page.get_by_role("img", name="Memory per device (used)")).to_be_in_viewport()
        page.screenshot(path=SCREENSHOT)


@pytest.fixture(scope="module")
def long_named(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    directory = tmp_path_factory.mktemp("long-named")
    shutil.copy(bundled_model(), directory / f"{LONG_NAME}.gguf")
    with running_router(["--models-dir", str(directory), "--ctx-size", "2048"]) as router:
        yield router


def _generate(router: RouterProcess, tokens: int, *, stream: bool = True) -> None:
    body = {
        "model": LONG_NAME,
        "messages": [{"role": "user", "content": "Tell me a long story about a corral."}],
        "max_tokens": tokens,
        "ignore_eos": True,
        "stream": stream,
    }
    with httpx.stream("POST", f"{router.url}/v1/chat/completions", json=body, timeout=300) as a:
        assert a.status_code == 200
        for _ in a.iter_raw():
            pass


def _records(router: RouterProcess) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = httpx.get(f"{router.url}/activity", timeout=30).json()[
        "requests"
    ]
    return records


def test_the_pages_fit_from_a_phone_to_a_wide_screen(long_named: RouterProcess, page: Page) -> None:
    # Rows, a timeline lane and a plot line with the long name; one answer sent whole.
    _generate(long_named, 8, stream=False)
    _generate(long_named, 8)
    for width in WIDTHS:
        page.set_viewport_size(ViewportSize(width=width, height=1200))
        for name, fragment in PAGES.items():
            open_ui(page, long_named, fragment)
            if name == "activity":
                # A sample with the model's tokens: the plots have a line (and a legend) to fit.
                expect(page.locator(f'.plot-legend li[title="{LONG_NAME}"]').first).to_be_attached()
                rows = page.locator(f'tr[data-model="{LONG_NAME}"]')
                expect(rows).to_have_count(2)
                for cell in rows.locator("td.col-model").all():  # cut, whole on hover
                    expect(cell).to_have_attribute("title", LONG_NAME)
                # A whole answer's time is not a first token's (a stream's is).
                first = rows.locator("td.col-first")
                expect(first.first).to_have_text(re.compile(r"^\d+\.\d+ s$"))
                expect(first.last).to_have_text(re.compile(r"^answer \d+\.\d+ s$"))
            elif name == "models":
                expect(page.get_by_text(LONG_NAME).first).to_be_attached()
            assert page.evaluate(OVERFLOWS) == [], f"{name} at {width} px"
            if name == "activity":
                # docs/images/webui-activity-WIDTH.png are copies of these
                page.screenshot(path=ARTIFACTS / f"activity-{width}.png")


def test_the_live_rate_is_the_one_the_request_reports(
    long_named: RouterProcess, page: Page, shot: Shot
) -> None:
    open_ui(page, long_named, "#/activity")
    expect(page.locator(".activity-state")).to_have_text("live")
    # What the row shows at each refresh while it generates: the last is the latest live
    # figure, read as late as the page had one (no wall time is read or assumed).
    page.evaluate(WATCH, LONG_NAME)
    generation = threading.Thread(target=_generate, args=(long_named, GENERATED))
    generation.start()
    expect(page.locator(f'tr[data-model="{LONG_NAME}"][data-state="generating"]')).to_have_count(1)
    shot("generating")
    generation.join()
    seen: list[list[float]] = page.evaluate("() => window.liveRates")
    final = next(r for r in _records(long_named) if r["completion_tokens"] == GENERATED)
    # The row still says generating as the stream's last events are counted, so its count may
    # reach the final one before the record ends (seen in CI under load): the latest figure
    # shown short of it is the latest that can only have been live.
    generated, live = [figures for figures in seen if figures[0] < GENERATED][-1]
    assert 0 < generated < GENERATED
    assert live == pytest.approx(final["tokens_per_s"], rel=0.10)


# A tokens/s chart of one model with a sample missing (no worker then), at 400 px: what it drew.
PLOT = """async () => {
    const { lineChart } = await import("./assets/js/views/plots.js");
    const now = 1000;
    const points = [[900, 4], [905, 6], [910, null], [915, 30], [920, 28]];
    const figure = lineChart("Test plot", [{ name: "m", points }], now, 120, (v) => v.toFixed(1));
    figure.style.width = "400px";
    document.body.append(figure);
    while (!figure.querySelector("svg")) await new Promise(requestAnimationFrame);
    const labels = [...figure.querySelectorAll("svg .plot-label")];
    return {
        lines: figure.querySelectorAll("polyline").length,
        grid: figure.querySelectorAll(".plot-grid").length,
        sizes: labels.map((el) => el.getBoundingClientRect().height),
        fonts: labels.map((el) => parseFloat(getComputedStyle(el).fontSize)),
        yTicks: figure.querySelectorAll("svg .plot-y").length,
    };
}"""


def test_plots_have_readable_axes_and_break_their_lines_at_gaps(
    long_named: RouterProcess, page: Page
) -> None:
    open_ui(page, long_named, "#/activity")
    drawn = page.evaluate(PLOT)
    assert drawn["lines"] == 2  # a gap is a gap, not a slope across it
    assert drawn["grid"] >= 4  # light gridlines at the ticks
    assert 3 <= drawn["yTicks"] <= 4
    assert min(drawn["fonts"]) >= 11
    assert min(drawn["sizes"]) >= 11  # as shown, not scaled down with the drawing
