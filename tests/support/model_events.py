"""Reading a router's ``/models/sse`` from a test, on a thread."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from typing import Any

import httpx

from tests.support.router_process import RouterProcess

__all__ = ["EventReader"]


class EventReader:
    """Reads ``/models/sse`` on a thread; the stream's first bytes prove the headers arrived."""

    def __init__(self, router: RouterProcess) -> None:
        self.events: list[dict[str, Any]] = []
        self._new = threading.Condition()
        self._client = httpx.Client(base_url=router.url, timeout=None)
        self._stream = self._client.stream("GET", "/models/sse")
        self.response = self._stream.__enter__()
        self._lines = self.response.iter_lines()
        assert next(self._lines) == ": connected"
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for line in self._lines:
                if line.startswith("data: "):
                    with self._new:
                        self.events.append(json.loads(line[6:]))
                        self._new.notify_all()
        except httpx.HTTPError:
            pass  # closed by the test

    def wait_for(self, model: str, event: str, **data: Any) -> dict[str, Any]:
        def match() -> dict[str, Any] | None:
            for item in self.events:
                payload = item.get("data") or {}
                if (
                    item["model"] == model
                    and item["event"] == event
                    and all(payload.get(key) == value for key, value in data.items())
                ):
                    return item
            return None

        with self._new:
            assert self._new.wait_for(lambda: match() is not None, timeout=30), self.events
        found = match()
        assert found is not None
        return found

    def close(self) -> None:
        # Closing the response alone leaves the connection open while the reading thread sits
        # in recv(), and the router would then wait out its graceful-shutdown timeout for it.
        stream = self.response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._stream.__exit__(None, None, None)
        self._client.close()
