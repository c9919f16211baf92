"""Media bytes from what a request names: a data URI, bare base64, an http(s) URL, or a
``file://`` URL inside the ``--media-path`` folder (:mod:`worker.media.local_files`).

As llama-server's ``handle_media`` (``tools/server/server-common.cpp``): remote files are
fetched by the worker (:mod:`worker.media.downloads`) with a size and a time limit (10 MB,
10 s), and anything unreadable is the client's error (400) naming the field. Whatever the
source, a request's media together stay within its :class:`~worker.media.rules.MediaBudget`.
"""

from __future__ import annotations

import binascii
from base64 import b64decode

from worker.host.errors import InvalidInput
from worker.media.downloads import download
from worker.media.local_files import read_local_media
from worker.media.rules import ByteCap, MediaBudget, MediaRules

__all__ = ["FETCH_MAX_BYTES", "FETCH_TIMEOUT_SECONDS", "decode_base64", "read_media"]

FETCH_MAX_BYTES = 10 * 1024 * 1024
FETCH_TIMEOUT_SECONDS = 10.0
_DATA_KINDS = ("data:image/", "data:audio/")
_NO_FILES_NO_PRIVATE = MediaRules()  # the defaults: no file:// media, no private hosts


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


async def read_media(
    url: str,
    field: str,
    budget: MediaBudget,
    rules: MediaRules = _NO_FILES_NO_PRIVATE,
    *,
    wait_seconds: float = FETCH_TIMEOUT_SECONDS,
) -> bytes:
    """The bytes ``url`` names, spent from ``budget``; ``field`` (e.g.
    ``messages[0].content[1].image_url``) starts every error message. A download is bounded by
    ``FETCH_MAX_BYTES``, the budget and ``wait_seconds`` (connecting, and each read); ``rules``
    say which folder ``file://`` URLs may read and whether URLs may name private hosts."""
    if not url:
        raise InvalidInput(f"{field}: no media given")
    if url.startswith(("http://", "https://")):
        cap = budget.cap(ByteCap(FETCH_MAX_BYTES, f"{url} is larger than {FETCH_MAX_BYTES} bytes"))
        data = await download(url, field, cap, wait_seconds, allow_private=rules.allow_private)
    elif url.startswith("file://"):
        data = await read_local_media(url, field, rules.media_path, budget.cap())
    elif url.startswith("data:"):
        data = _data_uri(url, field)
    else:
        data = decode_base64(url, field)
    return budget.spend(data, field)
