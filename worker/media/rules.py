"""What one request's media may make a worker do: how many parts, how many bytes in all, which
folder ``file://`` reads and whether URLs may name private hosts (docs/security.md, "Media and
JSON schemas in workers").

llama-server fetches any number of parts, from any host; a worker that did the same would let
one small request make it hold gigabytes (10 MB per URL, any number of URLs) or probe the
machine's own network. So a request's media, however given (inline, by URL, by ``file://``),
take at most the router's ``--max-body`` in all: no more than the request could have carried
inline.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from corral.children.environment import DEFAULT_MAX_BODY
from worker.host.errors import InvalidInput

__all__ = ["MAX_MEDIA_PARTS", "ByteCap", "MediaBudget", "MediaRules"]

# Anthropic's limit on images per request: past it a request is a bulk job, not a conversation,
# and each part may be a download the worker makes on the client's behalf.
MAX_MEDIA_PARTS = 100


@dataclass(frozen=True, slots=True)
class MediaRules:
    """A worker's media settings, as its flags give them."""

    media_path: Path | None = None  # --media-path: file:// media come from here; None: refused
    allow_private: bool = False  # --media-allow-private: URLs may name private hosts
    max_bytes: int = DEFAULT_MAX_BODY  # a request's media in all: the router's --max-body
    max_parts: int = MAX_MEDIA_PARTS

    def check_parts(self, count: int, where: str) -> None:
        """400 for more media parts than a request may have, before any is read."""
        if count > self.max_parts:
            raise InvalidInput(
                f"{where}: {count} media parts; a request may have at most {self.max_parts}"
            )


class ByteCap(NamedTuple):
    """How many bytes one read may return, and what the 400 past it says (after the field)."""

    bytes: int
    refusal: str


class MediaBudget:
    """The bytes a request's media may still take, spent part by part."""

    def __init__(self, total: int = DEFAULT_MAX_BODY) -> None:
        self._total = total
        self._used = 0

    def cap(self, own: ByteCap | None = None) -> ByteCap:
        """The tighter of a read's own cap (a download's 10 MB) and what the request has left."""
        left = self._total - self._used
        if own is not None and own.bytes <= left:
            return own
        return ByteCap(
            left, f"the request's media exceed {self._total} bytes in all (the --max-body limit)"
        )

    def spend(self, data: bytes, field: str) -> bytes:
        """``data``, counted; 400 when it is more than the request has left."""
        cap = self.cap()
        if len(data) > cap.bytes:
            raise InvalidInput(f"{field}: {cap.refusal}")
        self._used += len(data)
        return data
