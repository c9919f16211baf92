"""Header names on the wire as llama-server spells them (corral.http.header_spelling)."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.support.worker_process import worker


def _raw_head(url: str, path: str) -> bytes:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        conn.sendall(
            f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode()
        )
        data = b""
        while b"\r\n\r\n" not in data and (chunk := conn.recv(65536)):
            data += chunk
    return data.split(b"\r\n\r\n", 1)[0]


def test_process_start_time_keeps_its_case_other_names_stay_lower(models_dir: Path) -> None:
    with worker(models_dir / "alpha.gguf", "--metrics") as child:
        head = _raw_head(child.url, "/metrics")
    assert b"\r\nProcess-Start-Time-Unix: " in head
    assert b"\r\ncontent-type: " in head
