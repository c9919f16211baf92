"""Request sizes and names that could become paths (docs/protocol.md §8), against a real router.

Bodies over ``--max-body`` are refused before they are read; URLs and headers are bounded while
they are parsed; model ids, conversation ids and file names with dot segments, encoded dots, NUL
bytes or absolute paths never reach the file system.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from router.cli.main import parse_serve_args
from router.security.request_limits import MAX_HEAD_BYTES, MAX_HEADER_BYTES, MAX_URL_BYTES
from tests.support.router_process import RouterProcess, running_router

MAX_BODY = 1024
SPEC_413 = {
    "error": {
        "code": 413,
        "message": "request body is larger than the router's limit of 1 KiB (--max-body)",
        "type": "invalid_request_error",
    }
}
TRAVERSALS = [
    "../../etc/passwd",
    "..%2f..%2fetc%2fpasswd",
    "%2e%2e/%2e%2e/etc/passwd",
    "acme/../../etc",
    "acme/tiny-GGUF/../../../x",
    "/etc/passwd",
    "acme/tiny\x00-GGUF",
    "acme/tiny-GGUF:../../Q4_K_M",
    "..",
    "acme/..",
]


@pytest.fixture(scope="module")
def limited(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    home = tmp_path_factory.mktemp("limited")
    env = {
        "HF_HUB_CACHE": str(home / "hub-cache"),
        "HF_HOME": str(home / "hf"),
        # Port 9 (discard) on loopback: a download that got past validation would fail here,
        # never leave the machine.
        "HF_ENDPOINT": "http://127.0.0.1:9",
    }
    args = ["--models-dir", str(models_dir), "--ctx-size", "256", "--max-body", "1K"]
    with running_router(args, env) as router:
        yield router


def _raw(router: RouterProcess, data: bytes) -> tuple[int, bytes]:
    """Send bytes as they are (no client normalises them) and read the whole answer."""
    host, port = router.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(data)
        answer = b""
        while b"\r\n\r\n" not in answer or not _complete(answer):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def _complete(answer: bytes) -> bool:
    head, _, body = answer.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":", 1)[1])
    return False


def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_sent(
    limited: RouterProcess,
) -> None:
    # Ten gigabytes announced, one byte sent: the answer comes without the rest.
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10000000000\r\n"
    )
    status, body = _raw(limited, request + b"\r\n{")
    assert status == 413
    assert httpx.Response(413, content=body).json() == SPEC_413


def test_a_chunked_body_is_refused_once_it_passes_the_limit(limited: RouterProcess) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(8):
            yield b" " * 256  # 2 KiB in all, without a Content-Length

    answer = limited.client.post("/v1/chat/completions", content=chunks())
    assert "content-length" not in answer.request.headers
    assert (answer.status_code, answer.json()) == (413, SPEC_413)


def test_a_body_at_the_limit_is_read(limited: RouterProcess) -> None:
    body = b'{"model": "nope"}'.ljust(MAX_BODY)
    answer = limited.client.post("/v1/chat/completions", content=body)
    assert answer.status_code == 404  # read and routed: the model does not exist
    assert limited.client.post("/v1/chat/completions", content=body + b" ").status_code == 413


def test_long_urls_and_large_headers_are_refused_with_the_error_json(
    limited: RouterProcess,
) -> None:
    path = b"/health?" + b"a" * MAX_URL_BYTES
    status, body = _raw(limited, b"GET " + path + b" HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert status == 414
    assert httpx.Response(414, content=body).json()["error"]["code"] == 414
    header = b"X-Big: " + b"a" * MAX_HEADER_BYTES + b"\r\n"
    status, body = _raw(limited, b"GET /health HTTP/1.1\r\nHost: localhost\r\n" + header + b"\r\n")
    assert status == 431
    assert httpx.Response(431, content=body).json()["error"] == {
        "code": 431,
        "message": "the request's headers are larger than 64 KiB",
        "type": "invalid_request_error",
    }
    # Within the bounds, the same requests are served.
    status, _ = _raw(
        limited, b"GET /health?" + b"a" * 4000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n"
    )
    assert status == 200
    status, _ = _raw(
        limited, b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * 30000 + b"\r\n\r\n"
    )
    assert status == 200


def test_a_header_line_that_never_ends_is_refused_once_the_head_passes_its_bound(
    limited: RouterProcess,
) -> None:
    """httptools keeps an unfinished header line whole (its callback comes at the line's end):
    the bytes of an unfinished head are counted as they come, and one byte over is refused."""
    start = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Endless: "
    status, body = _raw(limited, start + b"a" * (MAX_HEAD_BYTES + 1 - len(start)))
    assert status == 431
    assert httpx.Response(431, content=body).json()["error"]["code"] == 431


@pytest.mark.parametrize("name", TRAVERSALS)
def test_downloads_refuse_names_that_are_not_repositories(
    limited: RouterProcess, name: str, tmp_path: Path
) -> None:
    answer = limited.client.post("/models", json={"model": name})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["type"] == "invalid_request_error"
    assert name not in limited.models()  # no download job was started


@pytest.mark.parametrize("name", [*TRAVERSALS, "alpha/../beta", "./alpha", "models/alpha.gguf"])
def test_removals_and_model_routes_refuse_paths(limited: RouterProcess, name: str) -> None:
    removal = limited.client.delete("/models", params={"model": name})
    assert removal.status_code == 404, removal.text
    props = limited.client.get("/props", params={"model": name})
    assert props.status_code == 404, props.text
    assert set(limited.models()) == {"alpha", "beta"}


@pytest.mark.parametrize("conversation", [*TRAVERSALS, "c1/../../c2"])
def test_stream_routes_treat_conversation_ids_as_names(
    limited: RouterProcess, conversation: str
) -> None:
    replay = limited.client.get("/v1/stream", params={"conv_id": conversation})
    assert replay.status_code == 404
    assert replay.json()["error"]["message"] == "Stream not found or expired"
    assert limited.client.delete("/v1/stream", params={"conv_id": conversation}).status_code == 204
    lookup = limited.client.post("/v1/streams/lookup", json={"conversation_ids": [conversation]})
    assert (lookup.status_code, lookup.json()) == (200, [])


def test_raw_dot_segments_in_paths_are_not_routes(limited: RouterProcess) -> None:
    for path in [b"/models/../v1/models", b"/v1/%2e%2e/models", b"/assets/..%2f..%2fapp.py"]:
        status, _ = _raw(limited, b"GET " + path + b" HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert status == 404, path


def test_the_max_body_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_serve_args([]).max_body == 64 << 20
    assert parse_serve_args(["--max-body", "1.5K"]).max_body == 1536
    for bad in ["lots", "0"]:
        with pytest.raises(SystemExit) as exit_info:
            parse_serve_args(["--max-body", bad])
        assert exit_info.value.code == 2
        assert "--max-body" in capsys.readouterr().err


def test_a_body_the_router_accepts_is_not_refused_by_the_worker(models_dir: Path) -> None:
    # Workers kept Litestar's 10 MB default; now the router hands them its own limit, so a body
    # over the workers' default (64 MiB) but under the router's passes both.
    padding = b" " * (66 << 20)
    body = b'{"model": "alpha", "content": "hi"' + padding + b"}"
    args = ["--models-dir", str(models_dir), "--ctx-size", "256", "--max-body", "80M"]
    with running_router(args) as router:
        answer = router.client.post(
            "/tokenize", content=body, headers={"content-type": "application/json"}
        )
    assert answer.status_code == 200, answer.text
    assert answer.json()["tokens"]
