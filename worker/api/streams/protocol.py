"""Request bodies of the resumable-stream routes."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["LookupRequest"]


class LookupRequest(msgspec.Struct):
    # Items stay loose: a non-string id is skipped rather than failing the whole lookup.
    conversation_ids: list[Any]
