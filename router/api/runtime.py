"""What every router handler needs, stored once on the app (``app.state.runtime``); built by
router/services.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from litestar import Request

from router.api.metrics import RequestCounter
from router.api.ollama.names import Copies
from router.download_jobs import DownloadJobs
from router.observe.activity import Activity
from router.relay.conversations import ConversationOwners
from router.relay.peers import PeerSet
from router.relay.proxy import Relay
from router.reloads import Reloader
from router.scheduling.scheduler import Scheduler
from router.security.rate_limits import SessionLimits
from router.settings import ServeSettings
from router.workers.pool import WorkerPool

__all__ = ["RouterRuntime", "runtime"]


@dataclass(frozen=True, slots=True)
class RouterRuntime:
    settings: ServeSettings
    pool: WorkerPool
    scheduler: Scheduler
    requests: RequestCounter
    downloads: DownloadJobs
    reloader: Reloader
    conversations: ConversationOwners
    peers: PeerSet
    activity: Activity
    relay: Relay
    ollama_copies: Copies = field(default_factory=Copies)  # /api/copy's names
    sessions: SessionLimits = field(default_factory=SessionLimits)  # each caller's in flight


def runtime(request: Request[Any, Any, Any]) -> RouterRuntime:
    value: RouterRuntime = request.app.state.runtime
    return value
