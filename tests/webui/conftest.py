"""The Web UI's end-to-end fixtures: real routers, Debian's Chromium driven by Playwright, and
screenshots of each step under ``test-artifacts/webui/``.

Playwright's own browser downloads are not used (they fail on machines without internet
access): the tests drive ``/usr/bin/chromium`` from Debian, which ``./test.sh`` installs when
it runs as root. Without it the tests are skipped, except in CI (``CI=true``), where that is a
failure.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Page,
    ViewportSize,
    expect,
    sync_playwright,
)

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.router_process import RouterProcess, running_router

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "webui"
# Without the background-networking flags Chromium keeps trying to reach Google's services,
# which a closed network refuses many times a second.
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DESKTOP = ViewportSize(width=1280, height=800)
PHONE = ViewportSize(width=390, height=844)

# The machine may be busy (two cores, other suites running): waits are generous, and every
# wait is for a state of the page, never a fixed time.
expect.set_options(timeout=60_000)

Shot = Callable[[str], None]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # Module scope: Playwright's event loop must be gone before other suites' asyncio code runs.
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing (Debian: apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    with sync_playwright() as playwright:
        # Playwright starts it with a fresh temporary profile (user data dir) every time.
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    """A fresh browser profile per test: empty IndexedDB and localStorage."""
    # Reduced motion: no transitions, so screenshots show finished states.
    context = browser.new_context(viewport=DESKTOP, color_scheme="light", reduced_motion="reduce")
    yield context
    context.close()


@pytest.fixture
def page(context: BrowserContext) -> Iterator[Page]:
    page = context.new_page()
    page.set_default_timeout(60_000)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    def on_console(message: ConsoleMessage) -> None:
        # Error statuses the tests cause on purpose (401, 404) are logged as failed loads.
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            errors.append(message.text)  # e.g. a Content-Security-Policy violation

    page.on("console", on_console)
    yield page
    assert not errors, f"errors in the page: {errors}"


@pytest.fixture
def shot(page: Page, request: pytest.FixtureRequest) -> Shot:
    """``shot("step")`` saves a screenshot as test-artifacts/webui/<test>-<n>-<step>.png."""
    name = re.sub(r"[^\w-]+", "-", request.node.name).strip("-")
    taken = [0]

    def take(step: str) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        taken[0] += 1
        page.screenshot(path=ARTIFACTS / f"{name}-{taken[0]:02d}-{step}.png")

    return take


@pytest.fixture(scope="module")
def ui_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """alpha (chat template) and beta (none), and ``broken``, which fails to load."""
    directory = tmp_path_factory.mktemp("ui-models")
    write_tiny_gguf(directory / "alpha.gguf", name="alpha")
    write_tiny_gguf(directory / "beta.gguf", name="beta", chat_template=None, seed=1)
    (directory / "broken.gguf").write_bytes(b"GGUF but not really a model file")
    return directory


def _serve_ui_models(ui_models: Path) -> Iterator[RouterProcess]:
    with running_router(["--models-dir", str(ui_models), "--ctx-size", "512"]) as process:
        yield process


@pytest.fixture
def router(ui_models: Path) -> Iterator[RouterProcess]:
    yield from _serve_ui_models(ui_models)


@pytest.fixture(scope="module")
def shared_router(ui_models: Path) -> Iterator[RouterProcess]:
    """One router for a module's tests that need no fresh one: each test's page has a fresh
    profile, and such a test passes whichever models the tests before it loaded."""
    yield from _serve_ui_models(ui_models)
