"""Per-key limits (docs/protocol.md §8): requests in flight and requests per minute.

Both are checked when a request arrives, before anything else is done for it; a refused request
costs nothing but the check. The rate is a token bucket refilled continuously, holding at most a
minute's worth, so a key may burst up to ``rpm`` requests and then gets one every
``60 / rpm`` seconds. The clock is injectable so tests move time by hand.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Final

from router.security.api_keys import ApiKey

__all__ = [
    "CONCURRENCY_RETRY_SECONDS",
    "Clock",
    "KeyLimiter",
    "LimitExceeded",
    "Limits",
    "TokenBucket",
]

Clock = Callable[[], float]
# A request in flight ends when it ends: nobody knows when, so a refused caller is told to retry
# soon rather than never.
CONCURRENCY_RETRY_SECONDS: Final = 1


class LimitExceeded(Exception):
    """Rendered as a 429 with ``Retry-After`` (whole seconds, at least 1)."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = max(1, math.ceil(retry_after))


class TokenBucket:
    def __init__(self, per_minute: int, clock: Clock = time.monotonic) -> None:
        self._capacity = float(per_minute)
        self._per_second = per_minute / 60.0
        self._clock = clock
        self._tokens = self._capacity
        self._updated = clock()

    def take(self) -> float:
        """Take a token: 0.0 when there was one, else the seconds until there will be."""
        now = self._clock()
        elapsed = max(0.0, now - self._updated)
        self._tokens = min(self._capacity, self._tokens + elapsed * self._per_second)
        self._updated = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        return (1.0 - self._tokens) / self._per_second


class KeyLimiter:
    """One key's counters. Not thread-safe: the router's event loop is its only user."""

    def __init__(self, key: ApiKey, clock: Clock = time.monotonic) -> None:
        self._concurrency = key.concurrency
        self._bucket = TokenBucket(key.rpm, clock) if key.rpm is not None else None
        self.in_flight = 0

    def admit(self, *, counted: bool = True) -> None:
        """Count a request in, or raise :class:`LimitExceeded`; pair with :meth:`release`.
        A request not ``counted`` (an ``uncounted`` route) only spends a token of the rate,
        and is paired with nothing."""
        if counted and self._concurrency is not None and self.in_flight >= self._concurrency:
            raise LimitExceeded(
                f"too many requests in flight for this key (at most {self._concurrency})",
                CONCURRENCY_RETRY_SECONDS,
            )
        # After the concurrency check: a request refused for that does not spend a token.
        wait = self._bucket.take() if self._bucket is not None else 0.0
        if wait > 0:
            raise LimitExceeded("rate limit reached for this key", wait)
        if counted:
            self.in_flight += 1

    def release(self) -> None:
        self.in_flight -= 1


class Limits:
    """The limiters of every key that has limits, by the key's secret."""

    def __init__(self, keys: Sequence[ApiKey], clock: Clock = time.monotonic) -> None:
        self._by_secret = {key.secret: KeyLimiter(key, clock) for key in keys if key.limited}

    def for_key(self, key: ApiKey) -> KeyLimiter | None:
        return self._by_secret.get(key.secret)
