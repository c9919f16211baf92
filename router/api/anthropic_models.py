"""Anthropic's Models API on the router's model list (docs/api.md, Anthropic's API).

Anthropic's SDKs (``client.models.list()``, ``client.models.retrieve(id)``) call the same paths
as OpenAI's, ``GET /v1/models`` and ``GET /v1/models/{id}``, and always send an
``anthropic-version`` header; that header picks Anthropic's shapes: ``{type: "model", id,
display_name, created_at}`` entries, listed in pages ``{data, has_more, first_id, last_id}``
that ``limit``, ``after_id`` and ``before_id`` page through.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import msgspec

from corral.http.errors import ApiError
from router.catalogue.listing import ModelListing

__all__ = [
    "ANTHROPIC_VERSION",
    "AnthropicModel",
    "AnthropicPage",
    "PageQuery",
    "anthropic_model",
    "anthropic_page",
    "wants_anthropic",
]

ANTHROPIC_VERSION = "anthropic-version"
# Anthropic's page size: 20 unless asked, from 1 to 1000.
DEFAULT_LIMIT, MAX_LIMIT = 20, 1000


class AnthropicModel(msgspec.Struct):
    id: str
    display_name: str
    created_at: str  # RFC 3339
    type: str = "model"


class AnthropicPage(msgspec.Struct):
    data: list[AnthropicModel]
    has_more: bool
    first_id: str | None
    last_id: str | None


class PageQuery(msgspec.Struct):
    limit: int | None = None
    after_id: str | None = None
    before_id: str | None = None


def wants_anthropic(headers: Mapping[str, str]) -> bool:
    """Whether the caller speaks Anthropic's API: its SDKs send the version on every request."""
    return ANTHROPIC_VERSION in headers


def anthropic_model(entry: ModelListing) -> AnthropicModel:
    created = datetime.fromtimestamp(entry.created, UTC)
    return AnthropicModel(
        id=entry.id, display_name=entry.id, created_at=created.isoformat().replace("+00:00", "Z")
    )


def anthropic_page(entries: Sequence[ModelListing], query: PageQuery) -> AnthropicPage:
    """One page of ``entries`` (sorted by id, the listing's order).

    The cursors compare ids rather than look them up, so a model removed between two pages
    does not break the walk: ``after_id`` pages forward from the first id after it,
    ``before_id`` backward from the last id before it; ``has_more`` says whether more lie
    further that way.
    """
    limit = DEFAULT_LIMIT if query.limit is None else query.limit
    if not 1 <= limit <= MAX_LIMIT:
        raise ApiError(400, f"limit: must be from 1 to {MAX_LIMIT}, not {limit}")
    after, before = query.after_id, query.before_id
    inside = [
        entry
        for entry in entries
        if (after is None or entry.id > after) and (before is None or entry.id < before)
    ]
    backward = before is not None and after is None
    data = [anthropic_model(entry) for entry in (inside[-limit:] if backward else inside[:limit])]
    return AnthropicPage(
        data=data,
        has_more=len(inside) > limit,
        first_id=data[0].id if data else None,
        last_id=data[-1].id if data else None,
    )
