"""What the layers below the answer raise: errors that name what went wrong, not an HTTP status.

The engine, the caches, sampling and media know nothing of HTTP (docs/architecture.md, Code
map). They raise :class:`InvalidInput` when a request asks for what cannot be done (an adapter
id the model lacks, a token outside the vocabulary, unreadable media) and :class:`EngineFailure`
when llama.cpp could not do what it should have (a slot file not written). The status each one
gets is decided once, in worker/api/errors.py.
"""

from __future__ import annotations

__all__ = ["EngineError", "EngineFailure", "InvalidInput"]


class EngineError(Exception):
    """A refusal or failure below the answer layer; ``message`` is what the client is told."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(EngineError):
    """The request asked for what cannot be done: the client's to fix."""


class EngineFailure(EngineError):
    """llama.cpp could not do what it should have: the server's fault."""
