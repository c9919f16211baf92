"""Which configured API key a request carries, compared in constant time (docs/protocol.md §8).

Shared by the router's key check (``router/security/guard.py``, with scopes and limits) and a worker
run alone with ``--api-key`` (``worker/host/access.py``), so both read keys as llama-server does.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Sequence
from typing import Final

from corral.http.errors import ApiError

__all__ = ["KeyDigests", "invalid_key_error", "presented_keys"]

_INVALID_KEY_MESSAGE: Final = "Invalid API Key"
_BEARER: Final = b"bearer "


def presented_keys(headers: Iterable[tuple[bytes, bytes]]) -> list[bytes]:
    """The keys a request offers: ``Authorization`` (``Bearer `` optional, as in
    llama-server) and Anthropic's ``X-Api-Key``."""
    presented: list[bytes] = []
    for name, raw in headers:
        header = name.lower()
        value = raw.strip()
        if header == b"authorization":
            if value[: len(_BEARER)].lower() == _BEARER:
                value = value[len(_BEARER) :].strip()
        elif header != b"x-api-key":
            continue
        if value:
            presented.append(value)
    return presented


def _digest(value: bytes) -> bytes:
    # Comparing fixed-length digests keeps even a key's length out of the timing.
    return hashlib.sha256(value).digest()


class KeyDigests:
    """The configured keys' digests; :meth:`match` says which one a presented key is."""

    def __init__(self, secrets: Sequence[str]) -> None:
        self._digests = tuple(_digest(secret.encode()) for secret in secrets)

    def __bool__(self) -> bool:
        return bool(self._digests)

    def match(self, presented: bytes) -> int | None:
        """The index of the key ``presented`` is, or None."""
        candidate = _digest(presented)
        found: int | None = None
        for index, digest in enumerate(self._digests):
            # No early exit: the time taken does not depend on which key matched.
            if hmac.compare_digest(candidate, digest):
                found = index
        return found


def invalid_key_error() -> ApiError:
    """The 401 both servers answer a request without a valid key with."""
    return ApiError(401, _INVALID_KEY_MESSAGE, "authentication_error")
