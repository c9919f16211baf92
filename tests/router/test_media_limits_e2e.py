"""A vision worker's media limits through a real router (docs/security.md, "Media and JSON schemas
in workers"): URL media naming a private host are refused without ``--media-allow-private``
and never fetched; a request's media parts are counted before any is read, and its bytes capped
by ``--max-body`` while they download; ``file://`` media no larger than that. A real router, real
workers with a real projector, and a real HTTP server on loopback that counts what it serves."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.files.tiny_media import png_bytes
from tests.support.files.tiny_mmproj import IMAGE_TOKENS, write_tiny_mmproj
from tests.support.local_server import serving
from tests.support.router_process import RouterProcess, running_router

MAX_BODY = 2 << 20  # the router's --max-body: what a request's media may take in all
SMALL = png_bytes(seed=1)
LARGE = png_bytes(512, 512, seed=2)  # random pixels: about 770 KiB, three of them too many


class ImageServer(ThreadingHTTPServer):
    """Serves ``/small.png`` and ``/large.png``, and counts the requests it gets."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Images)
        self.hits = 0
        self.url = f"http://127.0.0.1:{self.server_port}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a worker that stops reading a refused download closes the connection


class _Images(BaseHTTPRequestHandler):
    server: ImageServer

    def do_GET(self) -> None:
        self.server.hits += 1
        image = LARGE if self.path == "/large.png" else SMALL
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()  # no Content-Length: the size shows only as the bytes arrive
        self.wfile.write(image)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def images() -> Iterator[ImageServer]:
    with serving(ImageServer()) as server:
        yield server


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    """``open`` may fetch from private hosts; ``closed``, the same vision model, may not. Both
    read ``file://`` media from a folder holding a file larger than ``--max-body``."""
    folder = tmp_path_factory.mktemp("media-limits")
    model = write_tiny_gguf(folder / "seer.gguf", name="seer")
    mmproj = write_tiny_mmproj(folder / "mmproj-seer.gguf")
    media = folder / "media"
    media.mkdir()
    (media / "small.png").write_bytes(SMALL)
    (media / "huge.png").write_bytes(LARGE * 3)
    preset = folder / "models.ini"
    common = f"model = {model}\nmmproj = {mmproj}\nmedia-path = {media}\n"
    preset.write_text(f"[open]\n{common}media-allow-private = true\n\n[closed]\n{common}")
    args = ["--models-preset", str(preset), "--ctx-size", "2048", "--max-body", str(MAX_BODY)]
    with running_router(args) as router:
        yield router


def chat(router: RouterProcess, model: str, *urls: str) -> Any:
    content: list[dict[str, Any]] = [{"type": "text", "text": "What is this:"}]
    content += [{"type": "image_url", "image_url": {"url": url}} for url in urls]
    body = {"model": model, "messages": [{"role": "user", "content": content}], "max_tokens": 1}
    return router.client.post("/v1/chat/completions", json=body, timeout=120)


def refusal(reply: Any) -> str:
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["type"] == "invalid_request_error"
    message: str = error["message"]
    return message


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "localhost", "169.254.169.254", "[::ffff:127.0.0.1]", "10.0.0.1"],
)
def test_urls_to_private_hosts_are_refused_unfetched(
    router: RouterProcess, images: ImageServer, host: str
) -> None:
    before = images.hits
    url = f"http://{host}:{images.server_port}/small.png"
    # One message for every private host: nothing about the host or its answer.
    assert refusal(chat(router, "closed", url)) == (
        "messages[0].content[1].image_url: refused: private address (see --media-allow-private)"
    )
    assert images.hits == before


def test_with_media_allow_private_a_local_url_is_read(
    router: RouterProcess, images: ImageServer
) -> None:
    plain = chat(router, "open")
    seen = chat(router, "open", f"{images.url}/small.png")
    assert seen.status_code == 200, seen.text
    assert seen.json()["usage"]["prompt_tokens"] == (
        plain.json()["usage"]["prompt_tokens"] + IMAGE_TOKENS + 1  # + the newline before it
    )


def test_too_many_media_parts_are_refused_before_any_is_fetched(
    router: RouterProcess, images: ImageServer
) -> None:
    before = images.hits
    message = refusal(chat(router, "open", *[f"{images.url}/small.png"] * 101))
    assert message == "messages: 101 media parts; a request may have at most 100"
    assert images.hits == before


def test_the_media_total_is_capped_while_downloading(
    router: RouterProcess, images: ImageServer
) -> None:
    before = images.hits
    message = refusal(chat(router, "open", *[f"{images.url}/large.png"] * 10))
    assert message == (
        f"messages[0].content[3].image_url: the request's media exceed {MAX_BODY} bytes in all "
        "(the --max-body limit)"
    )
    assert images.hits - before == 3  # the third passed the cap as it arrived; no fourth


def test_a_file_url_larger_than_the_cap_is_refused(router: RouterProcess) -> None:
    assert chat(router, "closed", "file://small.png").status_code == 200
    message = refusal(chat(router, "closed", "file://huge.png"))
    assert message == (
        f"messages[0].content[1].image_url: the request's media exceed {MAX_BODY} bytes in all "
        "(the --max-body limit)"
    )
