"""Response header names spelled as llama-server spells them, on uvicorn's HTTP/1.1 protocol.

uvicorn writes every header name in lower case. HTTP says case does not matter, but clients
that read headers into a plain dict (llama.cpp's own server tests, scripts ported from
llama-server) look up llama-server's spelling, so the few headers llama-server names
are given back their case as the response head goes out.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["SpelledHeadersProtocol"]

_SPELLINGS = tuple(
    (b"\r\n" + name.lower() + b":", b"\r\n" + name + b":")
    for name in (
        b"Process-Start-Time-Unix",
        b"Access-Control-Allow-Origin",
        b"Access-Control-Allow-Methods",
        b"Access-Control-Allow-Headers",
    )
)


class _SpellingTransport:
    """Passes everything through; a response head gets its header names respelled."""

    def __init__(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport

    def write(self, data: bytes | bytearray | memoryview) -> None:
        raw = bytes(data)
        if raw.startswith(b"HTTP/1.1 "):
            end = raw.find(b"\r\n\r\n")
            head = raw[:end] if end >= 0 else raw
            for lower, spelled in _SPELLINGS:
                head = head.replace(lower, spelled)
            raw = head + (raw[end:] if end >= 0 else b"")
        self._transport.write(raw)  # type: ignore[attr-defined]  # uvloop's: no asyncio class

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class SpelledHeadersProtocol(HttpToolsProtocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(_SpellingTransport(transport))  # type: ignore[arg-type]
