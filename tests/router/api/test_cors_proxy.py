"""llama-server's /cors-proxy (router.api.cors_proxy): off unless asked, what it forwards, and
what Corral adds (docs/security.md): admin only, public targets only unless
--ui-mcp-proxy-private, every answer sandboxed."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.local_server import serving
from tests.support.router_process import RouterProcess, running_router


class _Target(BaseHTTPRequestHandler):
    seen: list[dict[str, str]]

    def do_GET(self) -> None:
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        html = self.path.endswith("/page")
        body = b"<script>steal(localStorage)</script>" if html else b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "text/html" if html else "application/json")
        self.send_header("Content-Length", str(len(body)))
        if html:
            self.send_header("Set-Cookie", "session=attacker")
            self.send_header("Content-Security-Policy", "script-src 'unsafe-inline'")
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
    with serving(ThreadingHTTPServer(("127.0.0.1", 0), handler)) as server:
        yield f"http://127.0.0.1:{server.server_port}/capture", handler.seen


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
    with running_router([*args, "--ui-mcp-proxy-private"]) as router:
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


SANDBOXED = {"content-security-policy": "sandbox", "x-content-type-options": "nosniff"}


def _sandboxed(response: httpx.Response) -> bool:
    return all(response.headers.get(name) == value for name, value in SANDBOXED.items())


@pytest.fixture(scope="module")
def proxying(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    """On, with an admin and an inference key, public targets only (the default)."""
    keys = tmp_path_factory.mktemp("keys") / "keys.txt"
    keys.write_text("admin-key admin\ninference-key inference\n")
    args = ["--models-dir", str(models_dir), "--ui-mcp-proxy", "--api-key-file", str(keys)]
    with running_router(args) as router:
        yield router


ADMIN = {"Authorization": "Bearer admin-key"}


@pytest.mark.parametrize(
    "where",
    [
        "http://127.0.0.1:{port}/capture",  # the router's workers, local services
        "http://localhost:{port}/capture",  # a name: every address it resolves to is checked
        "http://[::ffff:127.0.0.1]:{port}/capture",
        "http://0.0.0.0:{port}/capture",  # reaches loopback on Linux
        "http://[::1]:{port}/capture",
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata: link-local
        "http://10.1.2.3/",
        "http://192.168.1.1/",
        "http://100.64.0.1/",  # carrier-grade NAT: not global either
    ],
)
def test_loopback_link_local_and_private_targets_are_refused(
    proxying: RouterProcess, target: tuple[str, list[dict[str, str]]], where: str
) -> None:
    url, seen = target
    port = httpx.URL(url).port
    response = proxying.client.get(
        "/cors-proxy", params={"url": where.format(port=port)}, headers=ADMIN
    )
    assert response.status_code == 403, response.text
    assert response.json()["error"]["type"] == "permission_error"
    assert "public addresses only" in response.json()["error"]["message"]
    assert _sandboxed(response)
    assert seen == []


def test_an_inference_key_may_not_use_it(
    proxying: RouterProcess, target: tuple[str, list[dict[str, str]]]
) -> None:
    url, seen = target
    headers = {"Authorization": "Bearer inference-key"}
    response = proxying.client.get("/cors-proxy", params={"url": url}, headers=headers)
    assert response.status_code == 403
    assert response.json()["error"]["type"] == "permission_error"
    assert seen == []


def test_no_page_that_star_alone_covers_may_use_it(
    proxying: RouterProcess, target: tuple[str, list[dict[str, str]]]
) -> None:
    url, seen = target
    headers = {**ADMIN, "Origin": "https://evil.example"}  # a key the user pasted into a page
    response = proxying.client.get("/cors-proxy", params={"url": url}, headers=headers)
    assert response.status_code == 403
    assert seen == []


def test_every_answer_is_sandboxed(
    models_dir: Path, target: tuple[str, list[dict[str, str]]]
) -> None:
    url, seen = target
    args = ["--models-dir", str(models_dir), "--ui-mcp-proxy", "--ui-mcp-proxy-private"]
    with running_router(args) as router:
        # The connection goes to the address resolved; the target still sees its name.
        by_name = url.replace("127.0.0.1", "localhost")
        assert router.client.get("/cors-proxy", params={"url": by_name}).status_code == 200
        assert seen[-1]["host"] == httpx.URL(by_name).netloc.decode()
        page = router.client.get("/cors-proxy", params={"url": url.replace("capture", "page")})
        assert page.status_code == 200
        assert page.text == "<script>steal(localStorage)</script>"
        # The target's own looser policy is gone, and so is its cookie.
        assert page.headers.get_list("content-security-policy") == ["sandbox"]
        assert _sandboxed(page)
        assert "set-cookie" not in page.headers
        for bad in ("file:///etc/passwd", "http://127.0.0.1:1/"):
            failed = router.client.get("/cors-proxy", params={"url": bad})
            assert failed.status_code in (400, 502)
            assert _sandboxed(failed)
