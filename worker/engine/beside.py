"""Python work beside a long llama.cpp call, on a thread of its own."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["beside"]

T = TypeVar("T")


def beside(work: Callable[[], None], main: Callable[[], T]) -> T:
    """``main()`` here while ``work()`` runs on a thread of its own; either's error is raised.

    For Python work beside a long llama.cpp call, which releases the GIL: on a free core the
    two overlap, on a busy one nothing is lost.
    """
    errors: list[Exception] = []

    def run() -> None:
        try:
            work()
        except Exception as exc:  # handed to the caller, below
            errors.append(exc)

    thread = threading.Thread(target=run, name="llama-beside", daemon=True)
    thread.start()
    try:
        result = main()
    finally:
        thread.join()
    if errors:
        raise errors[0]
    return result
