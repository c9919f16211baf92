"""``file://`` media from the ``--media-path`` folder, as llama-server's ``handle_media`` reads
them.

Opt-in: without a media folder every ``file://`` URL is refused. With one, the URL's path is
relative to the folder: upstream appends it to the folder's path, so ``file://photos/cat.png``
and ``file:////photos//cat.png`` name the same file, and an absolute-looking path stays inside.
The path must pass upstream's file-name rules (``fs_validate_filename`` in common/common.cpp,
subfolders allowed): no ``..`` anywhere, no control or reserved characters. Corral also refuses a
file whose real location, links followed, is outside the folder, so that a link placed in it
cannot hand a client any file the worker can read. Every refusal is the client's error (400).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from worker.host.errors import InvalidInput

__all__ = ["read_local_media"]

_MAX_NAME = 255  # upstream's limit, the usual longest file name
_RESERVED = frozenset(':*?"<>|')
# Look-alikes of "." "/" "\" and markers of broken text, refused by upstream.
_LOOK_ALIKES = frozenset({0xFF0E, 0x2215, 0x2216, 0xFFFD, 0xFEFF})


def _allowed_character(c: str) -> bool:
    code = ord(c)
    return not (
        code <= 0x1F
        or 0x7F <= code <= 0x9F
        or 0xD800 <= code <= 0xDFFF
        or code in _LOOK_ALIKES
        or c in _RESERVED
    )


def _allowed_path(path: str) -> bool:
    """Upstream's ``fs_validate_filename(path, allow_subdirs=true)``."""
    return (
        0 < len(path.encode("utf-8", "surrogatepass")) <= _MAX_NAME
        and all(map(_allowed_character, path))
        and not path.startswith(" ")
        and not path.endswith((" ", "."))
        and ".." not in path
    )


def _read_inside(folder: Path, relative: str, field: str) -> bytes:
    real_folder = os.path.realpath(folder)
    target = os.path.realpath(f"{real_folder}/{relative}")
    if not Path(target).is_relative_to(real_folder):
        raise InvalidInput(f"{field}: file path is not allowed: {relative}")
    try:
        return Path(target).read_bytes()
    except OSError:
        raise InvalidInput(
            f"{field}: file does not exist or cannot be opened: {relative}"
        ) from None


async def read_local_media(url: str, field: str, media_path: Path | None) -> bytes:
    """The bytes of the file a ``file://`` URL names inside ``media_path``."""
    if media_path is None:
        raise InvalidInput(
            f"{field}: file:// URLs are not allowed unless --media-path is specified"
        )
    relative = url.removeprefix("file://")
    if not _allowed_path(relative):
        raise InvalidInput(f"{field}: file path is not allowed: {relative}")
    # Off the event loop: a large file on a slow disk must not stall other requests.
    return await asyncio.to_thread(_read_inside, media_path, relative, field)
