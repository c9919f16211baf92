"""``file://`` media from the ``--media-path`` folder, as llama-server's ``handle_media`` reads
them.

Opt-in: without a media folder every ``file://`` URL is refused. With one, the URL's path is
relative to the folder: upstream appends it to the folder's path, so ``file://photos/cat.png``
and ``file:////photos//cat.png`` name the same file, and an absolute-looking path stays inside.
The path must pass upstream's file-name rules (``fs_validate_filename`` in common/common.cpp,
subfolders allowed): no ``..`` anywhere, no control or reserved characters. Corral also refuses a
file whose real location, links followed, is outside the folder, so that a link placed in it
cannot hand a client any file the worker can read. Every refusal is the client's error (400).
A file is read only if it is a regular file no larger than what the request's media may still
take (:class:`~worker.media.rules.MediaBudget`), and no more of it than that is read.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

from worker.host.errors import InvalidInput
from worker.media.rules import ByteCap

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


def _read_capped(path: str, cap: ByteCap, field: str, relative: str) -> bytes:
    """At most ``cap.bytes`` of a regular file, its size checked before reading."""
    unreadable = InvalidInput(f"{field}: file does not exist or cannot be opened: {relative}")
    try:
        # Non-blocking: opening a FIFO placed in the folder must not hang the read.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        raise unreadable from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # a folder, device or FIFO: no size to check
            raise unreadable
        if info.st_size > cap.bytes:
            raise InvalidInput(f"{field}: {cap.refusal}")
    except BaseException:
        os.close(fd)
        raise
    try:
        with os.fdopen(fd, "rb") as file:
            data = file.read(cap.bytes + 1)  # a file that grew since is refused all the same
    except OSError:
        raise unreadable from None
    if len(data) > cap.bytes:
        raise InvalidInput(f"{field}: {cap.refusal}")
    return data


def _read_inside(folder: Path, relative: str, field: str, cap: ByteCap) -> bytes:
    real_folder = os.path.realpath(folder)
    target = os.path.realpath(f"{real_folder}/{relative}")
    if not Path(target).is_relative_to(real_folder):
        raise InvalidInput(f"{field}: file path is not allowed: {relative}")
    return _read_capped(target, cap, field, relative)


async def read_local_media(url: str, field: str, media_path: Path | None, cap: ByteCap) -> bytes:
    """The bytes of the file a ``file://`` URL names inside ``media_path``, at most
    ``cap.bytes`` of them (what the request's media budget has left)."""
    if media_path is None:
        raise InvalidInput(
            f"{field}: file:// URLs are not allowed unless --media-path is specified"
        )
    relative = url.removeprefix("file://")
    if not _allowed_path(relative):
        raise InvalidInput(f"{field}: file path is not allowed: {relative}")
    # Off the event loop: a large file on a slow disk must not stall other requests.
    return await asyncio.to_thread(_read_inside, media_path, relative, field, cap)
