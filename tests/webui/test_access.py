"""Serving the Web UI: public files with the right types and cache headers, no fallback that
could shadow the API, the vendored libraries as recorded, and the API key prompt."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from router.api.webui import ASSETS_DIR, WEBUI_DIR
from tests.support.router_process import RouterProcess, running_router
from tests.webui.conftest import Shot

KEY = "corral-test-key"
NOT_FOUND = {"error": {"code": 404, "message": "Not Found", "type": "not_found_error"}}
UNAUTHORIZED = {
    "error": {"code": 401, "message": "Invalid API Key", "type": "authentication_error"}
}


@pytest.fixture(scope="module")
def served(ui_models: Path) -> Iterator[RouterProcess]:
    """One router for the checks that only read files (no model is loaded by them)."""
    with running_router(["--models-dir", str(ui_models), "--ctx-size", "512"]) as router:
        yield router


@pytest.fixture(scope="module")
def keyed(ui_models: Path) -> Iterator[RouterProcess]:
    args = ["--models-dir", str(ui_models), "--ctx-size", "512", "--api-key", KEY]
    with running_router(args) as router:
        yield router


def test_files_are_served_with_types_and_revalidation(served: RouterProcess) -> None:
    client = served.client
    page = client.get("/")
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.headers["cache-control"] == "no-cache"
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.text == (WEBUI_DIR / "index.html").read_text()
    expected = {
        "/assets/js/main.js": "text/javascript; charset=utf-8",
        "/assets/app.css": "text/css; charset=utf-8",
        "/assets/icon.svg": "image/svg+xml",
        "/assets/vendor/manifest.json": "application/json",
    }
    for path, content_type in expected.items():
        answer = client.get(path)
        assert answer.status_code == 200, path
        assert answer.headers["content-type"] == content_type, path
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.content == (WEBUI_DIR / path.removeprefix("/")).read_bytes()
        again = client.get(path, headers={"If-None-Match": answer.headers["etag"]})
        assert (again.status_code, again.content) == (304, b""), path


@pytest.mark.parametrize(
    "path",
    [
        "/v1/unknown",
        "/v1/unknown/deeper",
        # A model id may hold "/" (org/repo:TAG): the model route's own 404, never the page.
        "/v1/models/unknown/deeper",
        "/c/some-conversation",
        "/index.html",
        "/assets/",
        "/assets/missing.js",
        "/assets/.hidden",
        "/assets/js/../../index.html",
        "/assets/%2e%2e/index.html",
        "/assets/..%2f..%2frouter%2fapp.py",
    ],
)
def test_no_fallback_shadows_the_api_or_leaves_the_assets(served: RouterProcess, path: str) -> None:
    # A raw request: httpx would normalise the dot segments away.
    with httpx.Client(base_url=served.url) as client:
        request = client.build_request("GET", served.url)
        request.url = request.url.copy_with(raw_path=path.encode())
        answer = client.send(request)
    assert answer.status_code == 404, path
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["error"]["code"] == 404
    if path.startswith("/v1/models/"):
        message = answer.json()["error"]["message"]
        assert message.startswith("model 'unknown/deeper' not found; models here: 'alpha'")
    elif path.startswith("/v1/"):
        assert answer.json() == NOT_FOUND
    assert served.client.post("/v1/unknown", json={}).json() == NOT_FOUND


def test_with_a_key_the_files_stay_public_and_the_api_does_not(keyed: RouterProcess) -> None:
    client = keyed.client
    assert client.get("/").status_code == 200
    assert client.get("/assets/js/main.js").status_code == 200
    assert client.get("/v1/models").json() == UNAUTHORIZED
    assert client.get("/v1/unknown").json() == UNAUTHORIZED
    authorised = {"Authorization": f"Bearer {KEY}"}
    assert client.get("/v1/unknown", headers=authorised).json() == NOT_FOUND


def test_vendored_files_match_their_manifest() -> None:
    """scripts/vendor_webui.py wrote these from the npm registry; nobody edits them by hand."""
    vendor = ASSETS_DIR / "vendor"
    manifest = json.loads((vendor / "manifest.json").read_text())
    files = manifest["files"]
    on_disk = {path.name for path in vendor.iterdir() if path.name != "manifest.json"}
    assert on_disk == set(files)
    for name, entry in files.items():
        assert hashlib.sha256((vendor / name).read_bytes()).hexdigest() == entry["sha256"], name
        assert re.fullmatch(r"\d+\.\d+\.\d+", entry["version"]), name


def test_every_module_import_resolves() -> None:
    """No build step: a typo in an import path would only show in a browser, so check here."""
    pattern = re.compile(r"""(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s+["'](\.[^"']+)["']""")
    modules = sorted((ASSETS_DIR / "js").rglob("*.js"))
    assert modules
    for module in modules:
        for target in pattern.findall(module.read_text()):
            assert (module.parent / target).resolve().is_file(), f"{module}: {target}"


def test_the_page_asks_for_the_key_and_keeps_it(
    keyed: RouterProcess, page: Page, shot: Shot
) -> None:
    page.goto(f"{keyed.url}/")
    dialog = page.get_by_role("dialog", name="API key")
    expect(dialog).to_contain_text("This server needs an API key")
    # The page cannot know which flag holds the key, so it names both (issue 54).
    expect(dialog).to_contain_text("the key from its --api-key or --api-key-file")
    # The server answered 401: it is up, and what it lacks is the key (docs/webui.md).
    expect(page.locator(".connection")).to_have_text("key needed")
    shot("asked")
    dialog.get_by_role("textbox", name="API key").fill("not-the-key")
    dialog.get_by_role("button", name="Save key").click()
    expect(dialog.get_by_role("alert")).to_have_text("That key was not accepted.")
    shot("rejected")
    dialog.get_by_role("textbox", name="API key").fill(KEY)
    dialog.get_by_role("button", name="Save key").click()
    expect(dialog).to_have_count(0)
    expect(page.locator(".connection")).to_have_text("live")
    expect(page.locator(".picker-button")).to_contain_text("alpha")
    assert page.evaluate("() => localStorage.getItem('corral.apiKey')") == KEY

    # Remembered: a reload asks nothing, and the API calls carry the key.
    with page.expect_request(lambda request: "/v1/models" in request.url) as listing:
        page.reload()
    assert listing.value.headers["authorization"] == f"Bearer {KEY}"
    expect(page.locator(".connection")).to_have_text("live")
    expect(page.get_by_role("dialog")).to_have_count(0)
