"""A process's peak memory, as the kernel counts it: for tests that a request cannot make the
router hold a file whole. A memory figure, not a time: a generous bound is never flaky."""

from __future__ import annotations

from pathlib import Path

__all__ = ["peak_rss_bytes", "sparse_file"]


def peak_rss_bytes(pid: int) -> int:
    """``VmHWM``: the most resident memory the process has had since it started."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024  # kB
    raise RuntimeError(f"no VmHWM for process {pid}")


def sparse_file(path: Path, size: int) -> Path:
    """A file of ``size`` zero bytes, one line long, that takes no room on the disk."""
    with path.open("wb") as file:
        file.truncate(size)
    return path
