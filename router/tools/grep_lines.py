"""``grep_search``'s scan: matching lines of files, streamed, with llama-server's output shape.

A file is read a line at a time (never whole); a line is matched as bytes by RE2, in time linear
in its length, and decoded only when it is shown. Each match shows its own block of context
lines, as llama-server's (overlapping blocks repeat lines), so the blocks of matches near the
end of a file wait for the lines after them while the scan goes on.

The caps (docs/tools.md): files larger than ``GREP_MAX_FILE_BYTES`` are skipped and named, at
most ``GREP_MAX_RESULTS`` matches and ``GREP_MAX_OUTPUT_BYTES`` of text are answered, and the
scan stops at a deadline, saying so.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from router.tools.bounded_reads import LineReader, open_regular_file
from router.tools.linear_regex import LinearRegex

__all__ = ["GREP_MAX_CONTEXT_LINES", "GREP_MAX_FILE_BYTES", "GREP_MAX_RESULTS", "GrepScan"]

GREP_MAX_RESULTS: Final = 100
GREP_MAX_FILE_BYTES: Final = 16 * 1024 * 1024
GREP_MAX_OUTPUT_BYTES: Final = 64 * 1024
GREP_MAX_CONTEXT_LINES: Final = 1000  # a block waits in memory for its lines after
GREP_BUDGET_S: Final = 15.0

_Line = tuple[int, bytes]  # 0-based number, content without its newline


@dataclass(slots=True)
class _Block:
    match: int
    lines: list[_Line]
    waiting: int  # lines after the match still to come


@dataclass(slots=True)
class GrepScan:
    """One call's matches so far, over as many files as it is given."""

    regex: LinearRegex
    context: int
    show_numbers: bool
    deadline: float = field(default_factory=lambda: time.monotonic() + GREP_BUDGET_S)
    out: list[str] = field(default_factory=list)
    total: int = 0
    size: int = 0
    cut: bool = False  # the output cap was reached
    late: bool = False  # the deadline passed
    skipped: list[str] = field(default_factory=list)  # files over GREP_MAX_FILE_BYTES

    @property
    def done(self) -> bool:
        return self.total >= GREP_MAX_RESULTS or self.cut or self.late

    def file(self, path: Path, shown: str) -> None:
        """Scan one file (unreadable ones are passed over, as llama-server's)."""
        try:
            file = open_regular_file(path)
        except OSError:
            return
        with file:
            if os.fstat(file.fileno()).st_size > GREP_MAX_FILE_BYTES:
                self.skipped.append(shown)
                return
            # The budget stops a file that grows while it is read.
            self._scan(LineReader(file, GREP_MAX_FILE_BYTES), shown)

    def _scan(self, reader: LineReader, shown: str) -> None:
        history: deque[_Line] = deque(maxlen=self.context)
        waiting: deque[_Block] = deque()
        number = -1
        while (line := reader.next_line(GREP_MAX_FILE_BYTES)) is not None:
            number += 1
            if time.monotonic() >= self.deadline:
                self.late = True
            if self.cut or self.late:
                break
            current = (number, line[0])
            for block in waiting:
                if block.waiting:
                    block.lines.append(current)
                    block.waiting -= 1
            while waiting and not waiting[0].waiting:
                self._show(waiting.popleft(), shown)
            if self.done and not waiting:
                break
            if not self.done and self.regex.search(current[1]):
                self.total += 1
                waiting.append(_Block(number, [*history, current], self.context))
                if not self.context:
                    self._show(waiting.pop(), shown)
            history.append(current)
        for block in waiting:
            self._show(block, shown)

    def _show(self, block: _Block, shown: str) -> None:
        for number, content in block.lines:
            mark = ":" if number == block.match else "-"
            prefix = f"{number + 1}{mark}" if self.show_numbers else ""
            # Never decode more of a line than the output could take.
            text = content[: GREP_MAX_OUTPUT_BYTES + 1].decode("utf-8", errors="replace")
            self._add(f"{shown}{mark}{prefix}{text}\n")
        if self.context:
            self._add("--\n")

    def _add(self, text: str) -> None:
        if self.cut:
            return
        size = len(text.encode())
        if self.size + size > GREP_MAX_OUTPUT_BYTES:
            self.cut = True
            return
        self.out.append(text)
        self.size += size

    def text(self) -> str:
        text = "".join(self.out) + f"\n---\nTotal matches: {self.total}\n"
        if self.total >= GREP_MAX_RESULTS:
            text += (
                f"[{GREP_MAX_RESULTS} matches limit reached. Narrow the path/pattern/include to "
                "see more.]\n"
            )
        if self.cut:
            text += f"[output truncated at {GREP_MAX_OUTPUT_BYTES} bytes]\n"
        if self.late:
            text += f"[search stopped after {GREP_BUDGET_S:.0f} s: narrow the path]\n"
        if self.skipped:
            names = ", ".join(self.skipped[:10]) + (", …" if len(self.skipped) > 10 else "")
            text += f"[skipped files larger than {GREP_MAX_FILE_BYTES} bytes: {names}]\n"
        return text
