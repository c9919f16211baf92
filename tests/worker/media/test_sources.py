"""Media references read as llama-server reads them: data URIs, bare base64, and http(s) URLs
fetched over real loopback HTTP with a size and a time limit."""

from __future__ import annotations

import base64
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.tiny_media import png_bytes
from worker.host.errors import InvalidInput
from worker.media.sources import read_media

pytestmark = pytest.mark.anyio
IMAGE = png_bytes()


class _Files(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/missing":
            self.send_error(404)
            return
        if self.path == "/elsewhere":
            self.send_response(302)
            self.send_header("Location", "/image.png")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(IMAGE)))
        self.end_headers()
        self.wfile.write(IMAGE)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def files() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


async def _error(url: str, **limits: float) -> str:
    with pytest.raises(InvalidInput) as caught:
        await read_media(url, "image_url", **limits)  # type: ignore[arg-type]
    message: str = caught.value.message
    assert message.startswith("image_url: ")
    return message


async def test_data_uris_and_bare_base64() -> None:
    encoded = base64.b64encode(IMAGE).decode()
    assert await read_media(f"data:image/png;base64,{encoded}", "f") == IMAGE
    assert await read_media(f"data:audio/wav;base64,{encoded}", "f") == IMAGE
    assert await read_media(encoded, "f") == IMAGE
    wrapped = "\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))
    assert await read_media(wrapped, "f") == IMAGE  # as MIME tools wrap it


@pytest.mark.parametrize(
    ("url", "wanted"),
    [
        ("data:image/png,abc", "must be base64 encoded"),
        ("data:image/png;base64", "no comma"),
        ("data:text/plain;base64,aGk=", "unsupported data URI type 'text/plain;base64'"),
        ("not base64!", "invalid base64"),
        ("file:///etc/hostname", "file:// URLs are not allowed unless --media-path"),
    ],
)
async def test_malformed_references(url: str, wanted: str) -> None:
    assert wanted in await _error(url)


async def test_http_urls_are_fetched_following_redirects(files: str) -> None:
    assert await read_media(f"{files}/image.png", "f") == IMAGE
    assert await read_media(f"{files}/elsewhere", "f") == IMAGE


async def test_fetch_failures_say_why(files: str) -> None:
    assert "HTTP 404" in await _error(f"{files}/missing")
    too_big = await _error(f"{files}/image.png", max_bytes=len(IMAGE) - 1)
    assert f"larger than {len(IMAGE) - 1} bytes" in too_big


async def test_a_server_that_never_answers_times_out() -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # listens, never accepts
        port = silent.getsockname()[1]
        message = await _error(f"http://127.0.0.1:{port}/x.png", wait_seconds=0.5)
    assert "did not answer within 0.5 s" in message


async def test_an_unreachable_host_is_a_400() -> None:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    assert "failed to download" in await _error(f"http://127.0.0.1:{port}/x.png")
