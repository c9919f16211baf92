"""Where the router's routes are: under ``--api-prefix``, beside ``--path``'s static files.

Both are ASGI wrappers around the whole app, as llama-server applies them before its routing:

- ``--api-prefix /v2`` moves every route under ``/v2`` (``/v2/health``, ``/v2/v1/models``, the
  Web UI at ``/v2/``); a path outside it is a JSON 404.
- ``--path DIR`` serves the files of ``DIR`` (``/`` is its ``index.html``) for ``GET`` and
  ``HEAD``, ahead of the routes, as llama-server's mount point does; a path naming no file
  there, or one leading out of it (``..``, a symlink, an ``index.html`` that is one), goes on
  to the routes. The files are public, like the built-in Web UI's.
"""

from __future__ import annotations

import json
import mimetypes
from pathlib import Path
from typing import Final
from urllib.parse import quote

import anyio
import anyio.to_thread
from anyio import AsyncFile
from litestar.enums import ScopeType
from litestar.types import (
    ASGIApp,
    HTTPResponseBodyEvent,
    HTTPResponseStartEvent,
    Receive,
    Scope,
    Send,
)

__all__ = ["ApiPrefix", "StaticFiles"]

_CHUNK_BYTES: Final = 64 * 1024


async def _answer(send: Send, status: int, body: bytes, content_type: str) -> None:
    start: HTTPResponseStartEvent = {
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", content_type.encode()),
            (b"content-length", str(len(body)).encode()),
        ],
    }
    await send(start)
    end: HTTPResponseBodyEvent = {
        "type": "http.response.body",
        "body": body,
        "more_body": False,
    }
    await send(end)


class ApiPrefix:
    """Every route under ``prefix``; ``scope["path"]`` and ``raw_path`` lose it and
    ``root_path`` gains it."""

    def __init__(self, app: ASGIApp, prefix: str) -> None:
        self._app = app
        self._prefix = prefix.rstrip("/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in (ScopeType.HTTP, ScopeType.WEBSOCKET) or not self._prefix:
            await self._app(scope, receive, send)
            return
        path: str = scope["path"]
        if path != self._prefix and not path.startswith(self._prefix + "/"):
            if scope["type"] == ScopeType.HTTP:
                error = {"code": 404, "message": "File Not Found", "type": "not_found_error"}
                body = json.dumps({"error": error}).encode()
                await _answer(send, 404, body, "application/json")
            return
        inner = path[len(self._prefix) :] or "/"
        root = scope.get("root_path", "") + self._prefix
        moved = dict(scope) | {"path": inner, "raw_path": self._raw_inner(scope, inner)}
        moved["root_path"] = root
        await self._app(moved, receive, send)  # type: ignore[arg-type]  # a TypedDict's copy

    def _raw_inner(self, scope: Scope, inner: str) -> bytes:
        """``raw_path`` without the prefix too: the relay sends it to workers and peers as it
        is (router.relay.headers.request_target), and they know no prefix."""
        raw: bytes | None = scope.get("raw_path")
        prefix = self._prefix.encode()
        if raw is not None and (raw == prefix or raw.startswith(prefix + b"/")):
            return raw[len(prefix) :] or b"/"
        # The prefix was sent percent-encoded (or no raw path came): encode the decoded path.
        return quote(inner).encode()


class StaticFiles:
    """``GET``/``HEAD`` of a file under ``directory`` answered with it; the rest to ``app``.

    A file is sent in chunks read in a worker thread: however large it is, the event loop never
    waits on the disk and the router holds one chunk of it at a time (docs/security.md).
    """

    def __init__(self, app: ASGIApp, directory: Path) -> None:
        self._app = app
        self._directory = directory.resolve()

    def _file(self, path: str) -> tuple[Path, int] | None:
        relative = path.lstrip("/") or "index.html"
        candidate = (self._directory / relative).resolve()
        if candidate.is_dir():
            # Resolved again: an index.html that is a symlink may lead anywhere.
            candidate = (candidate / "index.html").resolve()
        if not candidate.is_relative_to(self._directory) or not candidate.is_file():
            return None
        return candidate, candidate.stat().st_size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP or scope["method"] not in ("GET", "HEAD"):
            await self._app(scope, receive, send)
            return
        try:
            found = await anyio.to_thread.run_sync(self._file, scope["path"])
            file = None if found is None else await anyio.open_file(found[0], "rb")
        except (OSError, ValueError):  # unreadable, gone since it was found, or a NUL in the path
            found = file = None
        if found is None or file is None:
            await self._app(scope, receive, send)
            return
        async with file:
            await _send_file(send, found[0], found[1], file, head=scope["method"] == "HEAD")


async def _send_file(
    send: Send, path: Path, size: int, file: AsyncFile[bytes], *, head: bool
) -> None:
    content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    if content_type.startswith("text/"):
        content_type += "; charset=utf-8"
    start: HTTPResponseStartEvent = {
        "type": "http.response.start",
        "status": 200,
        "headers": [
            (b"content-type", content_type.encode()),
            (b"content-length", str(size).encode()),
        ],
    }
    await send(start)
    left = 0 if head else size  # never more than announced, if the file grows meanwhile
    while left > 0 and (chunk := await file.read(min(_CHUNK_BYTES, left))):
        left -= len(chunk)
        more: HTTPResponseBodyEvent = {
            "type": "http.response.body",
            "body": chunk,
            "more_body": True,
        }
        await send(more)
    end: HTTPResponseBodyEvent = {"type": "http.response.body", "body": b"", "more_body": False}
    await send(end)
