"""Web pages against a real keyless router (router/security/origins.py, docs/security.md).

The attack is a page's ``fetch()`` with ``Content-Type: text/plain``: a "simple" request the
browser sends from any page without a preflight. Each is made here as the browser would make it,
with the page's ``Origin``; what it would have done is checked on the router itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from router.app import create_app
from router.security.origins import TOOLS_OPT
from router.settings import ServeSettings
from tests.support.files.hub_cache import lay_out
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.router_process import RouterProcess, running_router

EVIL = "https://evil.example"
CACHED = "acme/tiny-GGUF:Q4_K_M"
CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
WRITE = {"tool": "write_file", "params": {"path": "pwned.txt", "content": "owned"}}


def _from_page(
    router: RouterProcess, origin: str, method: str, path: str, body: Any = None
) -> httpx.Response:
    """A request as a page's simple ``fetch()`` sends it: text/plain, the page's Origin."""
    content = msgspec.json.encode(body) if body is not None else None
    headers = {"Origin": origin, "Content-Type": "text/plain;charset=UTF-8"}
    return router.client.request(method, path, content=content, headers=headers)


def _status(router: RouterProcess, model: str) -> str:
    value: str = router.models()[model]["status"]["value"]
    return value


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tools-root")


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A hub cache holding one downloaded model, the user's, which DELETE /models would remove."""
    cache = tmp_path_factory.mktemp("hub")
    model = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    write_tiny_gguf(model, name="cached")
    lay_out(cache, {"tiny-Q4_K_M.gguf": model.read_bytes()})
    return cache


@pytest.fixture(scope="module")
def open_router(models_dir: Path, workspace: Path, hub_cache: Path) -> Iterator[RouterProcess]:
    """The default posture: no key, ``--cors-origins *`` (given: tools would make it localhost)."""
    args = ["--models-dir", str(models_dir), "--ctx-size", "256", "--cors-origins", "*"]
    tools = ["--tools", "write_file", "--tools-root", str(workspace)]
    with running_router([*args, *tools], env={"HF_HUB_CACHE": str(hub_cache)}) as router:
        yield router


@pytest.fixture(scope="module")
def loaded_alpha(open_router: RouterProcess) -> RouterProcess:
    reply = open_router.client.post("/v1/chat/completions", json={"model": "alpha", **CHAT})
    assert reply.status_code == 200, reply.text
    return open_router


def test_the_routes_that_run_tools_are_marked(models_dir: Path) -> None:
    # The others no page `*` covers may use are the admin-only ones (test_key_scopes.py).
    app = create_app(ServeSettings(models_dir=models_dir))
    marked = {
        (method, route.path)
        for route in app.routes
        for handler in getattr(route, "route_handlers", ())
        if handler.opt.get(TOOLS_OPT)
        for method in handler.http_methods
    }
    assert marked == {("POST", "/tools")}


def _assert_refused(response: httpx.Response) -> None:
    assert response.status_code == 403, response.text
    error = response.json()["error"]
    assert error["type"] == "permission_error"
    assert EVIL in error["message"]


def test_a_page_may_not_unload_a_model(loaded_alpha: RouterProcess) -> None:
    _assert_refused(_from_page(loaded_alpha, EVIL, "POST", "/models/unload", {"model": "alpha"}))
    assert _status(loaded_alpha, "alpha") == "loaded"


def test_a_page_may_not_load_a_model(open_router: RouterProcess) -> None:
    _assert_refused(_from_page(open_router, EVIL, "POST", "/models/load", {"model": "beta"}))
    assert _status(open_router, "beta") == "unloaded"


def test_a_page_may_not_run_tools(open_router: RouterProcess, workspace: Path) -> None:
    _assert_refused(_from_page(open_router, EVIL, "POST", "/tools", WRITE))
    assert not (workspace / "pwned.txt").exists()


def test_a_page_may_not_delete_downloads(open_router: RouterProcess, hub_cache: Path) -> None:
    _assert_refused(_from_page(open_router, EVIL, "DELETE", f"/models?model={CACHED}"))
    assert CACHED in open_router.models()
    assert (hub_cache / "models--acme--tiny-GGUF").is_dir()


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/models?reload=1", None),
        ("POST", "/models", {"model": "acme/other-GGUF:Q4_K_M"}),
        ("POST", "/slots/0?action=save&model=alpha", {"filename": "x.bin"}),
    ],
)
def test_star_never_covers_management(
    open_router: RouterProcess, method: str, path: str, body: Any
) -> None:
    _assert_refused(_from_page(open_router, EVIL, method, path, body))


def test_ollama_routes_refuse_in_ollama_s_error_shape(open_router: RouterProcess) -> None:
    refused = _from_page(open_router, EVIL, "POST", "/api/pull", {"model": "acme/x-GGUF:Q4"})
    assert refused.status_code == 403
    assert EVIL in refused.json()["error"]  # Ollama's {"error": "…"}


def test_star_keeps_inference_open_to_every_page(loaded_alpha: RouterProcess) -> None:
    reply = _from_page(
        loaded_alpha, EVIL, "POST", "/v1/chat/completions", {"model": "alpha", **CHAT}
    )
    assert reply.status_code == 200, reply.text
    assert reply.headers["access-control-allow-origin"] == EVIL
    listed = loaded_alpha.client.get("/v1/models", headers={"Origin": EVIL})
    assert listed.status_code == 200


def test_the_router_s_own_web_ui_may_manage(open_router: RouterProcess, workspace: Path) -> None:
    own = open_router.url  # http://127.0.0.1:PORT, as the Web UI's page sends it
    body = {**WRITE, "params": {"path": "by-the-web-ui.txt", "content": "ok"}}
    written = _from_page(open_router, own, "POST", "/tools", body)
    assert written.status_code == 200, written.text
    assert (workspace / "by-the-web-ui.txt").read_text() == "ok"
    assert _from_page(open_router, own, "GET", "/models?reload=1").status_code == 200
    # The handler's own answer: beta is not running.
    unloaded = _from_page(open_router, own, "POST", "/models/unload", {"model": "beta"})
    assert (unloaded.status_code, unloaded.json()["error"]["type"]) == (
        400,
        "invalid_request_error",
    )


def test_clients_without_an_origin_are_unchanged(open_router: RouterProcess) -> None:
    reload = open_router.client.get("/models", params={"reload": "1"})
    assert reload.status_code == 200
    ran = open_router.client.post(
        "/tools", json={**WRITE, "params": {"path": "by-curl.txt", "content": "ok"}}
    )
    assert ran.status_code == 200, ran.text


@pytest.fixture(scope="module")
def loopback_pages(models_dir: Path, workspace: Path) -> Iterator[RouterProcess]:
    """Tools on, so --cors-origins defaults to localhost."""
    args = ["--models-dir", str(models_dir), "--ctx-size", "256"]
    with running_router([*args, "--tools", "write_file", "--tools-root", str(workspace)]) as r:
        yield r


def test_a_page_on_localhost_gets_what_it_is_named_for(
    loopback_pages: RouterProcess, workspace: Path
) -> None:
    page = "http://localhost:3000"
    ran = _from_page(
        loopback_pages,
        page,
        "POST",
        "/tools",
        {**WRITE, "params": {"path": "from-localhost.txt", "content": "ok"}},
    )
    assert ran.status_code == 200, ran.text
    assert ran.headers["access-control-allow-origin"] == page
    assert (workspace / "from-localhost.txt").is_file()
    listed = _from_page(loopback_pages, page, "GET", "/models?reload=1")
    assert listed.status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/tools", WRITE),
        ("POST", "/v1/chat/completions", {"model": "alpha", **CHAT}),
        ("POST", "/models/load", {"model": "alpha"}),
        ("GET", "/v1/models", None),
    ],
)
def test_a_page_the_list_does_not_cover_gets_nothing(
    loopback_pages: RouterProcess, workspace: Path, method: str, path: str, body: Any
) -> None:
    _assert_refused(_from_page(loopback_pages, EVIL, method, path, body))
    assert not (workspace / "pwned.txt").exists()
    assert _status(loopback_pages, "alpha") == "unloaded"


def test_a_page_only_star_covers_may_not_unload_through_keep_alive(
    loaded_alpha: RouterProcess,
) -> None:
    """Ollama's ``keep_alive`` rides on an inference route: from a page only ``*`` covers it
    is ignored, as an inference key's, and an empty-prompt unload is refused."""
    ask = {"model": "alpha", "prompt": "hi", "stream": False, "options": {"num_predict": 1}}
    reply = _from_page(loaded_alpha, EVIL, "POST", "/api/generate", {**ask, "keep_alive": 0})
    assert reply.status_code == 200, reply.text
    unload = {"model": "alpha", "keep_alive": 0}
    assert _from_page(loaded_alpha, EVIL, "POST", "/api/generate", unload).status_code == 403
    assert _status(loaded_alpha, "alpha") == "loaded"
    listed = _from_page(loaded_alpha, EVIL, "GET", "/models").json()["data"]
    assert all("args" not in entry["status"] for entry in listed)  # no command lines either
