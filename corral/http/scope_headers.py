"""One request header read straight off an ASGI scope: middleware and the relay look up a
header or two per request, and building a framework ``Headers`` for that costs more than the
lookup. ASGI servers give header names in lower case, so ``name`` is lower case."""

from __future__ import annotations

from litestar.types import Scope

__all__ = ["scope_header"]


def scope_header(scope: Scope, name: bytes) -> bytes | None:
    """The first value of header ``name`` (lower case) in ``scope``; None when it has none."""
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None
