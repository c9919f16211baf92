"""Reading the files a tool call names without letting the call choose how much memory it takes.

A request may name a 300 MB file of one line, ``/dev/zero`` or a FIFO. So files are opened only
when they are regular (a FIFO would block the thread, a device never ends), and read a line at
a time through a :class:`LineReader`, which keeps at most a given number of bytes of any line
and stops after a budget of bytes read in all (docs/security.md, Requests that could stall the
router or fill its memory).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO, Final

__all__ = ["LineReader", "NotRegularFile", "open_regular_file"]

_SKIP_CHUNK: Final = 64 * 1024


class NotRegularFile(OSError):
    """A directory, FIFO, socket or device: nothing a file tool reads."""


def open_regular_file(path: Path) -> BinaryIO:
    """``path`` opened for reading, if it is a regular file (raises :class:`OSError`)."""
    # O_NONBLOCK: opening a FIFO must not wait for a writer; it changes nothing for a file.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(f"not a regular file: {path}")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class LineReader:
    """Lines as C++'s ``getline`` reads them (a final newline starts no other line), within
    ``budget`` bytes read from the file in all."""

    def __init__(self, file: BinaryIO, budget: int) -> None:
        self._file = file
        self._left = budget
        self.exhausted = False  # stopped at the budget: the file may go on

    def _read(self, limit: int) -> bytes:
        if self._left <= 0:
            # One byte past the budget tells a file that ends exactly there from a longer one.
            self.exhausted = self.exhausted or self._file.read(1) != b""
            return b""
        data = self._file.readline(min(limit, self._left))
        self._left -= len(data)
        return data

    def next_line(self, max_bytes: int) -> tuple[bytes, bool] | None:
        """The next line without its newline, and whether it is whole: a longer line is cut at
        ``max_bytes`` and the rest of it read past, never kept. None at the end (or budget)."""
        data = self._read(max_bytes + 1)
        if not data:
            return None
        if data.endswith(b"\n"):
            return data[:-1], True
        if len(data) <= max_bytes:  # the end of the file, or of the budget, within the line
            self._read(1)  # sets `exhausted` when the budget cut the line short
            return data, not self.exhausted
        while (rest := self._read(_SKIP_CHUNK)) and not rest.endswith(b"\n"):
            pass
        return data[:max_bytes], False

    def skip_line(self) -> bool:
        """Read past the next line without keeping it; False at the end (or budget)."""
        return self.next_line(_SKIP_CHUNK) is not None
