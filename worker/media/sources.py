"""Media bytes from what a request names: a data URI, bare base64, an http(s) URL, or a
``file://`` URL inside the ``--media-path`` folder (:mod:`worker.media.local_files`).

As llama-server's ``handle_media`` (``tools/server/server-common.cpp``): remote files are
fetched by the worker with a size and a time limit (10 MB, 10 s), and anything unreadable is
the client's error (400) naming the field.
"""

from __future__ import annotations

import binascii
from base64 import b64decode
from pathlib import Path

from worker.host.errors import InvalidInput
from worker.media.local_files import read_local_media

__all__ = ["FETCH_MAX_BYTES", "FETCH_TIMEOUT_SECONDS", "decode_base64", "read_media"]

FETCH_MAX_BYTES = 10 * 1024 * 1024
FETCH_TIMEOUT_SECONDS = 10.0
_DATA_KINDS = ("data:image/", "data:audio/")


def decode_base64(text: str, field: str) -> bytes:
    """Strict base64, line breaks allowed (llama-server's decoder stops at the first stray
    character and decodes what came before; here a typo is the client's error)."""
    try:
        data = b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput(f"{field}: invalid base64 data") from None
    if not data:
        raise InvalidInput(f"{field}: the media data is empty")
    return data


def _data_uri(url: str, field: str) -> bytes:
    header, comma, payload = url.partition(",")
    if not comma:
        raise InvalidInput(f"{field}: invalid data URI (no comma)")
    if not header.startswith(_DATA_KINDS):
        raise InvalidInput(f"{field}: unsupported data URI type '{header[5:]}'")
    if not header.endswith(";base64"):
        raise InvalidInput(f"{field}: data URIs must be base64 encoded")
    return decode_base64(payload, field)


async def _fetch(url: str, field: str, max_bytes: int, wait_seconds: float) -> bytes:
    import httpx  # lazily: 2 MiB of a worker's memory for a rare request (docs/benchmarks.md)

    body = bytearray()
    try:
        async with (
            httpx.AsyncClient(timeout=wait_seconds, follow_redirects=True) as client,
            client.stream("GET", url) as response,
        ):
            status = response.status_code
            if not 200 <= status < 300:
                raise InvalidInput(f"{field}: failed to download {url}: HTTP {status}")
            async for piece in response.aiter_bytes():
                body += piece
                if len(body) > max_bytes:
                    raise InvalidInput(f"{field}: {url} is larger than {max_bytes} bytes")
    except httpx.TimeoutException:
        raise InvalidInput(f"{field}: {url} did not answer within {wait_seconds:g} s") from None
    except httpx.HTTPError as exc:
        raise InvalidInput(f"{field}: failed to download {url}: {exc}") from None
    return bytes(body)


async def read_media(
    url: str,
    field: str,
    *,
    max_bytes: int = FETCH_MAX_BYTES,
    wait_seconds: float = FETCH_TIMEOUT_SECONDS,
    media_path: Path | None = None,
) -> bytes:
    """The bytes ``url`` names; ``field`` (e.g. ``messages[0].content[1].image_url``) starts
    every error message. ``max_bytes`` and ``wait_seconds`` bound a download (the wait applies
    to connecting and to each read); ``media_path`` is the folder ``file://`` URLs may read
    (None: they are refused)."""
    if not url:
        raise InvalidInput(f"{field}: no media given")
    if url.startswith(("http://", "https://")):
        return await _fetch(url, field, max_bytes, wait_seconds)
    if url.startswith("file://"):
        return await read_local_media(url, field, media_path)
    if url.startswith("data:"):
        return _data_uri(url, field)
    return decode_base64(url, field)
