"""The page follows its key's scope: an inference key sees no model management and a note that
says why, an admin key sees all of it, and the sidebar says which kind of key the page holds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.support.files.hub_cache import add_snapshot
from tests.support.router_process import RouterProcess, running_router
from tests.webui.conftest import Shot

ADMIN, INFERENCE = "ui-admin-key", "ui-inference-key"
CACHED = "acme/tiny-GGUF:Q4_K_M"  # a hub-cache model, the only kind with a Delete button


@pytest.fixture(scope="module")
def team(ui_models: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    home = tmp_path_factory.mktemp("team-ui")
    add_snapshot(home / "hub-cache", "acme/tiny-GGUF", ["tiny-Q4_K_M.gguf"])
    keys = home / "keys.txt"
    keys.write_text(f"{ADMIN} admin\n{INFERENCE} inference concurrency=4\n")
    env = {"HF_HUB_CACHE": str(home / "hub-cache"), "HF_HOME": str(home / "hf")}
    args = ["--models-dir", str(ui_models), "--ctx-size", "512", "--api-key-file", str(keys)]
    with running_router(args, env) as router:
        yield router


def _open_with_key(page: Page, router: RouterProcess, key: str) -> None:
    # The key is stored before the page starts, as the key dialog leaves it.
    page.add_init_script(f"localStorage.setItem('corral.apiKey', {key!r})")
    page.goto(f"{router.url}/#/models")
    expect(page.locator(".connection")).to_have_text("live")


@pytest.mark.parametrize(("key", "scope"), [(INFERENCE, "inference"), (ADMIN, "admin")])
def test_the_manager_shows_management_only_to_admin_keys(
    team: RouterProcess, page: Page, shot: Shot, key: str, scope: str
) -> None:
    _open_with_key(page, team, key)
    expect(page.locator(".key-scope")).to_have_text(f"{scope} key")
    alpha = page.locator(".model-row[data-model=alpha]")
    cached = page.locator(f".model-row[data-model='{CACHED}']")
    expect(alpha).to_be_visible()
    expect(cached).to_be_visible()
    # Chatting is for every key.
    expect(alpha.get_by_role("button", name="Chat")).to_be_visible()
    managing = [
        page.get_by_role("button", name="Download"),
        page.get_by_role("button", name="Reload list"),
        alpha.get_by_role("button", name="Load"),
        cached.get_by_role("button", name=f"Delete {CACHED}"),
    ]
    # The rows are on screen, so a hidden button is left out, not yet to come; the admin
    # case shows that each locator finds its button.
    for button in managing:
        if scope == "admin":
            expect(button).to_be_visible()
        else:
            expect(button).to_be_hidden()
    # An inference key is told why they are missing (docs/security.md, key scopes).
    note = page.get_by_role("note")
    if scope == "admin":
        expect(note).to_be_hidden()
    else:
        expect(note).to_be_visible()
        expect(note).to_contain_text("need an admin key")
    shot(scope)
