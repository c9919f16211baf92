"""A small Hugging Face hub on loopback, speaking enough of the protocol for huggingface_hub.

Two listening sockets: the hub itself (``/api/models/…`` and ``/{repo}/resolve/{rev}/{file}``)
and a "CDN" on another port that serves LFS bytes by sha256, as the real hub redirects to one.
Being another origin is what makes huggingface_hub read the file's metadata from the redirect
(``X-Linked-Etag``/``X-Linked-Size``), and what lets a test check that the token never leaves
the hub. Everything a test needs to steer a download is here: a file can be served corrupt,
claim a size it does not have, or pause after some bytes until :meth:`FakeHub.release`; every
request and every byte sent is recorded.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import uvicorn

__all__ = ["FakeHub", "HubFile", "HubRequest", "Transfer"]

_CHUNK = 16 * 1024
Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]


@dataclass
class HubFile:
    content: bytes
    lfs: bool = True
    corrupt: bool = False  # serve other bytes (same length) than the published checksum's
    advertised_size: int | None = None  # publish this size instead of the real one
    pause_after: int | None = None  # the first GET stops after this many bytes until release()

    @property
    def size(self) -> int:
        return self.advertised_size if self.advertised_size is not None else len(self.content)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()

    @property
    def git_sha1(self) -> str:
        return hashlib.sha1(b"blob %d\0" % len(self.content) + self.content).hexdigest()

    @property
    def served(self) -> bytes:
        if not self.corrupt:
            return self.content
        middle = len(self.content) // 2
        return (
            self.content[:middle]
            + bytes([self.content[middle] ^ 0xFF])
            + self.content[middle + 1 :]
        )


@dataclass
class HubRequest:
    method: str
    path: str
    authorization: str | None
    range: str | None


@dataclass
class Transfer:
    """One GET of a file's bytes."""

    file: str  # "org/repo/path"
    start: int
    sent: int = 0
    paused: bool = False
    authorization: str | None = None


@dataclass
class _Repo:
    commit: str
    files: dict[str, HubFile] = field(default_factory=dict)


def _listen() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


def _parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """``bytes=N-`` / ``bytes=N-M`` → ``(start, end exclusive)``; None for no header."""
    if not header or not header.startswith("bytes="):
        return None
    first, _, last = header.removeprefix("bytes=").partition("-")
    start = int(first)
    end = int(last) + 1 if last else size
    return start, min(end, size)


class FakeHub:
    def __init__(self) -> None:
        self._repos: dict[str, _Repo] = {}
        self.requests: list[HubRequest] = []
        self.transfers: list[Transfer] = []
        self._changed = threading.Condition()
        self._released = threading.Event()
        self._hub_socket, self._cdn_socket = _listen(), _listen()
        hub_port: int = self._hub_socket.getsockname()[1]
        self._cdn_port: int = self._cdn_socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{hub_port}"
        self.cdn_url = f"http://127.0.0.1:{self._cdn_port}"
        config = uvicorn.Config(
            self, log_config=None, lifespan="off", access_log=False, timeout_graceful_shutdown=2
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._hub_socket, self._cdn_socket]},
            name="fake-hub",
            daemon=True,
        )

    # --- the test's side ---------------------------------------------------------------------

    def __enter__(self) -> FakeHub:
        self._thread.start()  # the sockets already listen: nothing to wait for
        return self

    def __exit__(self, *_: object) -> None:
        self.release()
        self._server.should_exit = True
        self._thread.join(timeout=30)
        self._hub_socket.close()
        self._cdn_socket.close()

    def add_repo(
        self, repo: str, files: Mapping[str, bytes | HubFile], *, commit: str | None = None
    ) -> str:
        """Publish a repository; returns its commit."""
        commit = commit or hashlib.sha1(repo.encode()).hexdigest()
        items = {p: f if isinstance(f, HubFile) else HubFile(f) for p, f in files.items()}
        self._repos[repo] = _Repo(commit, items)
        return commit

    def file(self, repo: str, path: str) -> HubFile:
        return self._repos[repo].files[path]

    def release(self) -> None:
        """Let every paused transfer (and every later one) go on."""
        self._released.set()

    def wait_for_pause(self, file: str, timeout: float = 30.0) -> Transfer:
        """The transfer of ``org/repo/path`` once it has sent its bytes up to the pause."""
        with self._changed:
            assert self._changed.wait_for(
                lambda: any(t.paused for t in self.transfers if t.file == file), timeout
            ), f"no paused transfer of {file}: {self.transfers}"
            return next(t for t in self.transfers if t.file == file and t.paused)

    def transfers_of(self, file: str) -> list[Transfer]:
        with self._changed:
            return [t for t in self.transfers if t.file == file]

    # --- the server's side -------------------------------------------------------------------

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        method, path = scope["method"], scope["path"]
        with self._changed:
            self.requests.append(
                HubRequest(method, path, headers.get("authorization"), headers.get("range"))
            )
        if scope["server"][1] == self._cdn_port:
            await self._cdn(method, path, headers, send)
        else:
            query = parse_qs(scope["query_string"].decode())
            await self._hub(method, path, query, headers, send)

    async def _hub(
        self,
        method: str,
        path: str,
        query: dict[str, list[str]],
        headers: dict[str, str],
        send: Send,
    ) -> None:
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "models"] and len(parts) >= 6:
            repo = self._repo("/".join(parts[2:4]))
            if repo is None:
                return await _error(send, 404, "RepoNotFound")
            if parts[5] not in ("main", repo.commit):
                return await _error(send, 404, "RevisionNotFound")
            if parts[4] == "revision":
                return await _json(send, self._info("/".join(parts[2:4]), repo, "blobs" in query))
            if parts[4] == "tree":
                return await _json(send, _tree(repo))
        if len(parts) >= 5 and parts[2] == "resolve":
            repo_id, file_path = "/".join(parts[:2]), "/".join(parts[4:])
            return await self._resolve(method, repo_id, parts[3], file_path, headers, send)
        await _error(send, 404, "EntryNotFound")

    def _repo(self, repo_id: str) -> _Repo | None:
        return self._repos.get(repo_id)

    def _info(self, repo_id: str, repo: _Repo, blobs: bool) -> dict[str, Any]:
        siblings: list[dict[str, Any]] = []
        for path, file in sorted(repo.files.items()):
            sibling: dict[str, Any] = {"rfilename": path}
            if blobs:
                sibling.update(size=file.size, blobId=file.git_sha1)
                if file.lfs:
                    sibling["lfs"] = {"size": file.size, "sha256": file.sha256, "pointerSize": 134}
            siblings.append(sibling)
        return {"id": repo_id, "modelId": repo_id, "sha": repo.commit, "siblings": siblings}

    async def _resolve(
        self,
        method: str,
        repo_id: str,
        revision: str,
        path: str,
        request_headers: dict[str, str],
        send: Send,
    ) -> None:
        repo = self._repo(repo_id)
        if repo is None:
            return await _error(send, 404, "RepoNotFound")
        if revision not in ("main", repo.commit):
            return await _error(send, 404, "RevisionNotFound")
        file = repo.files.get(path)
        if file is None:
            return await _error(send, 404, "EntryNotFound")
        common = {"x-repo-commit": repo.commit}
        if file.lfs:  # the real hub redirects LFS files to its CDN
            headers = {
                **common,
                "location": f"{self.cdn_url}/lfs/{file.sha256}",
                "x-linked-etag": f'"{file.sha256}"',
                "x-linked-size": str(file.size),
                "etag": f'"{file.git_sha1}"',
                "content-length": "0",
            }
            return await _respond(send, 302, headers)
        if method == "HEAD":
            headers = {**common, "etag": f'"{file.git_sha1}"', "content-length": str(file.size)}
            return await _respond(send, 200, headers)
        await self._stream(
            f"{repo_id}/{path}",
            file,
            request_headers.get("range"),
            request_headers.get("authorization"),
            send,
            head=False,
        )

    async def _cdn(self, method: str, path: str, headers: dict[str, str], send: Send) -> None:
        sha256 = path.removeprefix("/lfs/")
        for repo_id, repo in self._repos.items():
            for name, file in repo.files.items():
                if file.lfs and file.sha256 == sha256:
                    return await self._stream(
                        f"{repo_id}/{name}",
                        file,
                        headers.get("range"),
                        headers.get("authorization"),
                        send,
                        head=method == "HEAD",
                    )
        await _error(send, 404, "EntryNotFound")

    async def _stream(
        self,
        name: str,
        file: HubFile,
        range_header: str | None,
        authorization: str | None,
        send: Send,
        *,
        head: bool,
    ) -> None:
        data = file.served
        size = len(data)
        span = _parse_range(range_header, size)
        start, end = span if span is not None else (0, size)
        if start >= size:
            return await _respond(send, 416, {"content-range": f"bytes */{size}"}, b"")
        headers = {
            "accept-ranges": "bytes",
            "content-length": str(end - start),
            "etag": file.sha256,
        }
        if span is not None:
            headers["content-range"] = f"bytes {start}-{end - 1}/{size}"
        await _start(send, 206 if span is not None else 200, headers)
        if head:
            return await send({"type": "http.response.body", "body": b""})
        transfer = Transfer(name, start, authorization=authorization)
        with self._changed:
            self.transfers.append(transfer)
        pause_at = (
            file.pause_after if file.pause_after is not None and start < file.pause_after else None
        )
        file.pause_after = None  # only the first transfer pauses
        offset = start
        while offset < end:
            if pause_at is not None and offset >= pause_at:
                with self._changed:
                    transfer.paused = True
                    self._changed.notify_all()
                await asyncio.get_running_loop().run_in_executor(None, self._released.wait)
                pause_at = None
            stop = min(end, offset + _CHUNK, pause_at if pause_at is not None else end)
            await send({"type": "http.response.body", "body": data[offset:stop], "more_body": True})
            with self._changed:
                transfer.sent += stop - offset
                self._changed.notify_all()
            offset = stop
        await send({"type": "http.response.body", "body": b""})


def _tree(repo: _Repo) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for path, file in sorted(repo.files.items()):
        entry: dict[str, Any] = {
            "type": "file",
            "path": path,
            "size": file.size,
            "oid": file.git_sha1,
        }
        if file.lfs:
            entry["lfs"] = {"oid": file.sha256, "size": file.size, "pointerSize": 134}
        entries.append(entry)
    return entries


async def _start(send: Send, status: int, headers: Mapping[str, str]) -> None:
    raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})


async def _respond(send: Send, status: int, headers: Mapping[str, str], body: bytes = b"") -> None:
    await _start(send, status, headers)
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, value: Any) -> None:
    body = json.dumps(value).encode()
    await _respond(
        send, 200, {"content-type": "application/json", "content-length": str(len(body))}, body
    )


async def _error(send: Send, status: int, code: str) -> None:
    body = json.dumps({"error": code}).encode()
    headers = {
        "x-error-code": code,
        "content-type": "application/json",
        "content-length": str(len(body)),
    }
    await _respond(send, status, headers, body)
