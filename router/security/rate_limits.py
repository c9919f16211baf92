"""Per-key limits (docs/protocol.md §8): requests in flight and requests per minute; and every
caller's resumable sessions in flight.

All are checked when a request arrives, before anything else is done for it; a refused request
costs nothing but the check. The rate is a token bucket refilled continuously, holding at most a
minute's worth, so a key may burst up to ``rpm`` requests and then gets one every
``60 / rpm`` seconds. The clock is injectable so tests move time by hand.

A resumable session's request (``X-Conversation-Id``) goes on once its client has left: it
waits for its model and generates for nobody, holding no connection. So those count against
their caller even where its key has no ``concurrency=`` (or there are no keys): at most
:data:`SESSIONS_IN_FLIGHT` at once per key, or without keys for the user and for the pages of
other sites (docs/security.md, "Key holders (scopes)").
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Final

from corral.http.errors import ApiError
from router.security.api_keys import ApiKey

__all__ = [
    "CONCURRENCY_RETRY_SECONDS",
    "SESSIONS_IN_FLIGHT",
    "Clock",
    "KeyLimiter",
    "LimitExceeded",
    "Limits",
    "SessionLimits",
    "TokenBucket",
]

Clock = Callable[[], float]
# A request in flight ends when it ends: nobody knows when, so a refused caller is told to retry
# soon rather than never.
CONCURRENCY_RETRY_SECONDS: Final = 1
# A caller's resumable sessions in flight at once, their clients there or not: the Web UI runs
# one per conversation that is generating; more are someone parking work for nobody.
SESSIONS_IN_FLIGHT: Final = 4


class LimitExceeded(Exception):
    """Rendered as a 429 with ``Retry-After`` (whole seconds, at least 1)."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = max(1, math.ceil(retry_after))

    def answer(self) -> ApiError:
        """The 429 a client is told."""
        headers = {"Retry-After": str(self.retry_after)}
        return ApiError(429, self.message, "rate_limit_error", headers=headers)


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


class SessionLimits:
    """Every caller's resumable-session requests in flight (see above), by its share
    (router.scheduling.waiting_line.Caller.share: a key's id; without keys None for the user,
    "*" for other sites' pages). Not thread-safe: the router's event loop is its only user."""

    def __init__(self, limit: int = SESSIONS_IN_FLIGHT) -> None:
        self._limit = limit
        self._in_flight: dict[str | None, int] = {}

    def admit(self, share: str | None) -> _Session:
        """Count a session's request in, or raise :class:`LimitExceeded`; the request releases
        what this returns when it ends (router.scheduling.leases.bind)."""
        count = self._in_flight.get(share, 0)
        if count >= self._limit:
            raise LimitExceeded(
                f"too many resumable sessions in flight for this caller (at most {self._limit})",
                CONCURRENCY_RETRY_SECONDS,
            )
        self._in_flight[share] = count + 1
        return _Session(self._in_flight, share)


class _Session:
    """One admitted session request's count; :meth:`release` is idempotent."""

    __slots__ = ("_in_flight", "_share")

    def __init__(self, in_flight: dict[str | None, int], share: str | None) -> None:
        self._in_flight: dict[str | None, int] | None = in_flight
        self._share = share

    def release(self) -> None:
        if self._in_flight is None:
            return
        left = self._in_flight[self._share] - 1
        if left:
            self._in_flight[self._share] = left
        else:
            del self._in_flight[self._share]  # callers come and go: keep only the busy ones
        self._in_flight = None
