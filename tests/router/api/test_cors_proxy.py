"""llama-server's /cors-proxy (router.api.cors_proxy): off unless asked, and what it forwards."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support.router_process import running_router


class _Target(BaseHTTPRequestHandler):
    seen: list[dict[str, str]]

    def do_GET(self) -> None:
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def target() -> Iterator[tuple[str, list[dict[str, str]]]]:
    handler: type[_Target] = type("Handler", (_Target,), {"seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/capture", handler.seen
    finally:
        server.shutdown()
        server.server_close()


def test_off_by_default(models_dir: Path) -> None:
    with running_router(["--models-dir", str(models_dir)]) as router:
        response = router.client.get("/cors-proxy", params={"url": "http://127.0.0.1:1/"})
        assert response.status_code == 403
        assert response.json()["error"]["type"] == "feature_disabled"


def test_forwards_only_the_headers_named_for_it(
    models_dir: Path, target: tuple[str, list[dict[str, str]]]
) -> None:
    url, seen = target
    args = ["--models-dir", str(models_dir), "--ui-mcp-proxy", "--api-key", "secret"]
    with running_router(args) as router:
        headers = {
            "Authorization": "Bearer secret",
            "Cookie": "session=secret",
            "X-Llama-Server-Proxy-Header-Authorization": "Bearer for-the-target",
        }
        response = router.client.get("/cors-proxy", params={"url": url}, headers=headers)
        assert response.status_code == 200
        assert response.json() == {"ok": True}
        assert seen[0]["authorization"] == "Bearer for-the-target"
        assert "cookie" not in seen[0]
        no_content = router.client.post(
            "/cors-proxy", params={"url": url}, json={}, headers=headers
        )
        assert no_content.status_code == 204
        assert no_content.content == b""
        # Not public: without the key it is the usual 401, and bad URLs are refused.
        assert router.client.get("/cors-proxy", params={"url": url}).status_code == 401
        for bad in ("file:///etc/passwd", "http://u:p@127.0.0.1/", "http:///x"):
            refused = router.client.get("/cors-proxy", params={"url": bad}, headers=headers)
            assert refused.status_code == 400
