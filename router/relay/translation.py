"""An answer relayed in another API's shape: the seam between the relay and an API that the
router translates (Ollama's, router/api/ollama) rather than forwards byte for byte.

The relay still owns everything else about the answer: the lease, the stall watchdog's
progress, the client's disconnect, closing the worker's connection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from corral.http.errors import ApiError

__all__ = ["AnswerTranslation"]


class AnswerTranslation(Protocol):
    """How one request's answer from a worker is turned into the client's API."""

    @property
    def media_type(self) -> str:
        """The content type of what the client gets (an error status's body is JSON)."""
        ...

    def whole(self, status: int, body: bytes) -> tuple[int, bytes]:
        """A whole answer (JSON, an error among them): the status and body the client gets."""
        ...

    def stream(self, events: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """A streamed (SSE) answer, as it comes: what the client gets, piece by piece."""
        ...

    def error(self, error: ApiError) -> bytes:
        """What the client gets when the worker goes away: a whole body, or a stream's end."""
        ...
