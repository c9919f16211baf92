"""One typed ``GET /models`` entry for every kind of model the router lists (docs/api.md).

A local model (router/api/models.py), a download in progress (router/download_jobs.py)
and a peer's model (router/relay/peers.py) are all a :class:`ModelListing`: llama-server's
fields first, then Corral's own. A field a kind does not have is left ``UNSET`` and so absent
from the JSON, where ``None`` is written as ``null``: a download says ``"ttl": null``, a peer's
model has no ``ttl`` at all, exactly as clients have read them so far.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

__all__ = ["ListingStatus", "ModelListing", "QueueView", "ReplicaView"]


class QueueView(msgspec.Struct, kw_only=True):
    """One model's waiting requests (router/scheduling/waiting_line.py), for ``/models``,
    ``/metrics`` and ``corral ps``.

    ``reason``: why they wait (docs/serving.md): ``loading``, ``models-max`` or ``memory`` (the
    count or the memory leaves no room, and nothing may be evicted yet), ``busy`` (its slots
    are taken), ``aging`` (held back so that another model's request, waiting past the bound,
    can have its room), ``queued`` (behind another model's load).
    """

    waiting: int
    classes: dict[str, int]
    keys: dict[str, int]  # by key id; "" for requests without a key
    oldest_seconds: float
    reason: str | None = None


class ReplicaView(msgspec.Struct, kw_only=True):
    """One worker copy of a model with ``replicas`` above 1 (docs/scaling.md): which, its
    status, its node (with ``--cluster``, while running), its requests in flight and its
    worker's resident memory (while running)."""

    copy: int
    status: str
    in_flight: int
    node: str | UnsetType = UNSET
    rss: int | UnsetType = UNSET


class ListingStatus(msgspec.Struct, kw_only=True):
    """``status``: llama-server's ``value``, ``args``, ``preset`` and failure fields, and
    Corral's own (why it failed, the backoff left, a download's progress, a peer's address)."""

    value: str
    args: list[str] | UnsetType = UNSET
    preset: str | UnsetType = UNSET
    progress: dict[str, Any] | UnsetType = UNSET
    failed: bool | UnsetType = UNSET
    exit_code: int | UnsetType | None = UNSET
    error: str | UnsetType | None = UNSET
    reason: str | UnsetType = UNSET
    retry_after: float | UnsetType = UNSET
    peer: str | UnsetType = UNSET
    url: str | UnsetType = UNSET


class ModelListing(msgspec.Struct, kw_only=True):
    """In llama-server's order, so the JSON reads as it always has."""

    id: str
    aliases: list[str] = msgspec.field(default_factory=list)
    tags: list[str] = msgspec.field(default_factory=list)
    object: str = "model"
    owned_by: str
    created: int
    status: ListingStatus
    source: str  # "cache", "models_dir", "preset", "peer"
    can_remove: bool
    # Corral's own: how the scheduler treats the model, and the router's tools it is offered
    # (null: all, docs/tools.md). Local models and downloads.
    pinned: bool | UnsetType = UNSET
    ttl: float | UnsetType | None = UNSET
    tools: list[str] | UnsetType | None = UNSET
    # Local models: the size of their files (shown before a first load), what they read and
    # can do, and while running the worker's model info and resident memory.
    size: int | UnsetType = UNSET
    architecture: dict[str, Any] | UnsetType = UNSET
    capabilities: list[str] | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = UNSET
    memory: dict[str, Any] | UnsetType | None = UNSET
    # The requests waiting for it in the scheduler's queue, while any does.
    queue: QueueView | UnsetType = UNSET
    # While running on GPUs: the devices the router chose, the bytes it expected there, whether
    # it fitted, and the --fit-target it handed the worker (docs/api.md).
    placement: dict[str, Any] | UnsetType = UNSET
    # With ``--cluster``, while running: the node its worker runs on (docs/scaling.md).
    node: str | UnsetType = UNSET
    # ``replicas`` above 1: each copy (the entry's other fields are the first running one's).
    replicas: list[ReplicaView] | UnsetType = UNSET
    # A peer's model: which peer, and its name there.
    peer: str | UnsetType = UNSET
    remote_id: str | UnsetType = UNSET
