"""The threads a worker computes with, read from its ``/metrics`` (docs/serving.md, "CPU
threads"), and a wait for a count that travels on the worker's stdin while the scrape goes by
HTTP."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

__all__ = ["threads_in", "threads_once"]


def threads_in(metrics: str) -> tuple[int, int]:
    """``corral_threads`` and ``corral_threads_batch`` in a worker's metrics text."""
    found = [
        re.search(rf"^corral_{name} (\S+)$", metrics, re.M) for name in ("threads", "threads_batch")
    ]
    threads, batch = found
    assert threads is not None, metrics
    assert batch is not None, metrics
    return int(float(threads[1])), int(float(batch[1]))


def threads_once(scrape: Callable[[], str], wanted: tuple[int, int]) -> tuple[int, int]:
    """The count the scrape reports once it is ``wanted``, or the last one after 10 s: a
    command on stdin and a scrape on HTTP may reach the worker in either order."""
    deadline = time.monotonic() + 10
    while (now := threads_in(scrape())) != wanted and time.monotonic() < deadline:
        time.sleep(0.01)
    return now
