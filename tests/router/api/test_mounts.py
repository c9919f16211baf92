"""``--api-prefix`` and ``--path`` on a real router: every route under the prefix, files first,
none from outside the directory, big ones streamed (docs/security.md), and requests relayed to
workers without the prefix."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.process_memory import peak_rss_bytes, sparse_file
from tests.support.router_process import RouterProcess, running_router

HI = [{"role": "user", "content": "hi"}]
BIG = 256 * 1024 * 1024  # sparse: no room on the disk


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    """One router for the module: its tests only read the directory it serves."""
    tmp_path = tmp_path_factory.mktemp("mounts")
    (tmp_path / "models").mkdir()
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True)
    (site / "index.html").write_text("<h1>my page</h1>")
    (site / "notes.txt").write_text("plain notes")
    (site / "docs" / "index.html").write_text("the docs")
    (tmp_path / "secret.txt").write_text("not for the web")
    (site / "leak.txt").symlink_to(tmp_path / "secret.txt")
    (site / "linked").mkdir()
    (site / "linked" / "index.html").symlink_to(tmp_path / "secret.txt")
    sparse_file(site / "big.bin", BIG)
    args = ["--models-dir", str(tmp_path / "models"), "--api-prefix", "v2/", "--path", str(site)]
    with running_router(args) as process:
        yield process


def _origin(router: RouterProcess) -> str:
    return router.url.removesuffix("/v2")


def test_every_route_moves_under_the_prefix(router: RouterProcess) -> None:
    assert router.url.endswith("/v2")  # the log names the whole address
    assert router.client.get("/health").json() == {"status": "ok"}
    assert router.client.get("/v1/models").json()["data"] == []
    outside = httpx.get(_origin(router) + "/health")
    assert outside.status_code == 404
    assert outside.json()["error"]["type"] == "not_found_error"


def test_the_directorys_files_are_served_ahead_of_the_routes(router: RouterProcess) -> None:
    page = router.client.get("/")
    assert (page.status_code, page.text) == (200, "<h1>my page</h1>")
    assert page.headers["content-type"].startswith("text/html")
    assert router.client.get("/notes.txt").text == "plain notes"
    assert router.client.get("/docs/").text == "the docs"
    head = router.client.head("/notes.txt")
    assert (head.status_code, head.headers["content-length"], head.content) == (200, "11", b"")
    # A path that names no file there is a route's, or a 404 as before.
    assert router.client.get("/props").json()["role"] == "router"
    assert router.client.get("/nothing.txt").status_code == 404


@pytest.mark.parametrize(
    "path", ["/v2/%2E%2E/secret.txt", "/v2/leak.txt", "/v2/linked/", "/v2/a%00b.txt"]
)
def test_no_file_outside_the_directory_is_served(router: RouterProcess, path: str) -> None:
    answer = httpx.get(_origin(router) + path)
    assert answer.status_code == 404
    assert "not for the web" not in answer.text


def test_requests_relayed_to_a_worker_lose_the_prefix(models_dir: Path) -> None:
    """The worker knows no prefix: ``/v2/v1/chat/completions`` reaches it as
    ``/v1/chat/completions``, through the official client, whole and streamed."""
    args = ["--models-dir", str(models_dir), "--ctx-size", "512", "--api-prefix", "/v2"]
    with running_router(args) as prefixed:
        _relay_through(prefixed)


def _relay_through(prefixed: RouterProcess) -> None:
    ask: dict[str, Any] = {"model": "alpha", "messages": HI, "max_tokens": 6, "temperature": 0}
    with openai.OpenAI(base_url=f"{prefixed.url}/v1", api_key="unused", max_retries=0) as client:
        whole = client.chat.completions.create(**ask).choices[0].message.content
        assert whole
        stream = client.chat.completions.create(**ask, stream=True)
        pieces = [chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices]
    assert "".join(pieces) == whole
    props = prefixed.client.get("/props", params={"model": "alpha"})
    assert props.status_code == 200, props.text
    assert "default_generation_settings" in props.json()  # the worker's own answer
    body = {"model": "alpha", "messages": HI, "stream": False, "options": {"num_predict": 6}}
    ollama = prefixed.client.post("/api/chat", json=body)
    assert ollama.status_code == 200, ollama.text
    assert ollama.json()["message"]["content"]


def test_a_big_file_is_streamed_not_held(router: RouterProcess) -> None:
    before = peak_rss_bytes(router.process.pid)
    received = 0
    with router.client.stream("GET", "/big.bin") as answer:
        assert answer.headers["content-length"] == str(BIG)
        for chunk in answer.iter_bytes():
            received += len(chunk)
    assert received == BIG
    # Read whole, the file alone would take its size; streamed, a chunk of it at a time.
    assert peak_rss_bytes(router.process.pid) - before < BIG // 4
