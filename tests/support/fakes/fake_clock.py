"""A monotonic clock a test moves by hand, so ttl and backoff rules are checked without sleeping."""

from __future__ import annotations

__all__ = ["FakeClock"]


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
