"""Media references read as llama-server reads them: data URIs, bare base64, and http(s) URLs
fetched over real loopback HTTP with a size and a time limit; private hosts (the loopback server
here among them) refused unless allowed, and a request's bytes capped while they arrive."""

from __future__ import annotations

import base64
import socket
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support.files.tiny_media import png_bytes
from tests.support.local_server import serving
from tests.support.tls import self_signed
from worker.host.errors import InvalidInput
from worker.media.rules import MediaBudget, MediaRules
from worker.media.sources import FETCH_MAX_BYTES, read_media

pytestmark = pytest.mark.anyio
IMAGE = png_bytes()
ALLOWED = MediaRules(allow_private=True)  # the test's server is on loopback
HITS: list[str] = []  # every path the server was asked for


class _Files(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        HITS.append(self.path)
        if self.path == "/unsized":  # no Content-Length: the body ends when the server closes
            self.send_response(200)
            self.end_headers()
            self.wfile.write(IMAGE)
            return
        if self.path == "/huge":  # says it is larger than a download may be
            self.send_response(200)
            self.send_header("Content-Length", str(FETCH_MAX_BYTES + 1))
            self.end_headers()
            return
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


@contextmanager
def _serving(tls: ssl.SSLContext | None = None) -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    with serving(server):
        yield server.server_port


@pytest.fixture(scope="module")
def files() -> Iterator[str]:
    with _serving() as port:
        yield f"http://127.0.0.1:{port}"


async def _read(url: str, rules: MediaRules = ALLOWED, budget: MediaBudget | None = None) -> bytes:
    return await read_media(url, "f", budget or MediaBudget(), rules)


async def _error(
    url: str,
    rules: MediaRules = ALLOWED,
    budget: MediaBudget | None = None,
    wait_seconds: float = 10.0,
) -> str:
    with pytest.raises(InvalidInput) as caught:
        await read_media(
            url, "image_url", budget or MediaBudget(), rules, wait_seconds=wait_seconds
        )
    message: str = caught.value.message
    assert message.startswith("image_url: ")
    return message


async def test_data_uris_and_bare_base64() -> None:
    encoded = base64.b64encode(IMAGE).decode()
    assert await _read(f"data:image/png;base64,{encoded}") == IMAGE
    assert await _read(f"data:audio/wav;base64,{encoded}") == IMAGE
    assert await _read(encoded) == IMAGE
    wrapped = "\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))
    assert await _read(wrapped) == IMAGE  # as MIME tools wrap it


@pytest.mark.parametrize(
    ("url", "wanted"),
    [
        ("data:image/png,abc", "must be base64 encoded"),
        ("data:image/png;base64", "no comma"),
        ("data:text/plain;base64,aGk=", "unsupported data URI type 'text/plain;base64'"),
        ("not base64!", "invalid base64"),
        ("file:///etc/hostname", "file:// URLs are not allowed unless --media-path"),
        ("http://999.1.1.1/x.png", "invalid URL: Invalid IPv4 address"),
    ],
)
async def test_malformed_references(url: str, wanted: str) -> None:
    assert wanted in await _error(url)


async def test_http_urls_are_fetched_following_redirects(files: str) -> None:
    assert await _read(f"{files}/image.png") == IMAGE
    assert await _read(f"{files}/elsewhere") == IMAGE
    port = files.rpartition(":")[2]
    assert await _read(f"http://localhost:{port}/image.png") == IMAGE  # whichever address serves


async def test_fetch_failures_say_why(files: str) -> None:
    assert "HTTP 404" in await _error(f"{files}/missing")
    assert f"/huge is larger than {FETCH_MAX_BYTES} bytes" in await _error(f"{files}/huge")


@pytest.mark.parametrize("path", ["/image.png", "/unsized"])
async def test_a_download_stops_at_what_the_request_has_left(files: str, path: str) -> None:
    budget = MediaBudget(len(IMAGE) * 3 // 2)
    assert await _read(f"{files}{path}", budget=budget) == IMAGE
    # The second is refused: by its Content-Length, else as its bytes arrive.
    message = await _error(f"{files}{path}", budget=budget)
    assert f"the request's media exceed {len(IMAGE) * 3 // 2} bytes in all" in message


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",  # loopback
        "localhost",  # a name that resolves to loopback
        "[::1]",
        "[::ffff:127.0.0.1]",  # loopback, IPv4-mapped
        "169.254.169.254",  # link-local: cloud metadata
        "10.1.2.3",
        "192.168.0.1",
        "0.0.0.0",
    ],
)
async def test_private_hosts_are_refused_unless_allowed(files: str, host: str) -> None:
    port = files.rpartition(":")[2]
    before = len(HITS)
    message = await _error(f"http://{host}:{port}/image.png", MediaRules())
    # The same words whatever the host: nothing about it reaches the client.
    assert message == "image_url: refused: private address (see --media-allow-private)"
    assert len(HITS) == before  # never connected to


async def test_https_is_sent_to_a_checked_address_and_verified_for_the_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The connection goes to the address the name resolved to; the certificate must still be
    # the name's, not the address's.
    key, cert = self_signed(tmp_path, "localhost")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    with _serving(tls) as port:
        assert await _read(f"https://localhost:{port}/image.png") == IMAGE
        message = await _error(f"https://127.0.0.1:{port}/image.png")
    assert "certificate is not valid for '127.0.0.1'" in message


async def test_a_server_that_never_answers_times_out() -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # listens, never accepts
        port = silent.getsockname()[1]
        message = await _error(f"http://127.0.0.1:{port}/x.png", wait_seconds=0.5)
    assert "did not answer within 0.5 s" in message


async def test_an_unreachable_host_is_a_400() -> None:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    assert "failed to download" in await _error(f"http://127.0.0.1:{port}/x.png")
