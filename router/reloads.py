"""Reading the model sources again while serving (docs/serving.md, Reloads).

``GET /models?reload=1``, SIGHUP and a finished download all come here. The catalogue and the
peers are read first; nothing changes unless both read well. Then the pool stops what changed
or went away and keeps the rest running, and :attr:`Reloader.reloaded` tells the services that
keep lists of their own (the downloads drop their ended jobs, as upstream).
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from router.relay.peers import PeerSet
from router.settings import ServeSettings
from router.startup import load_catalogue, load_peers
from router.topics import Topic
from router.workers.pool import WorkerPool

__all__ = ["CatalogueReloaded", "Reloader"]

_log = structlog.get_logger("corral.router")


@dataclass(frozen=True, slots=True)
class CatalogueReloaded:
    models: tuple[str, ...]  # every model the new catalogue lists


class Reloader:
    def __init__(self, settings: ServeSettings, pool: WorkerPool, peers: PeerSet) -> None:
        self._settings = settings
        self._pool = pool
        self._peers = peers
        self.reloaded: Topic[CatalogueReloaded] = Topic()

    async def reload(self) -> None:
        """Re-read the model sources and the peers; raises ``CatalogueError``, changing nothing,
        when either does not read well."""
        catalogue, peers = load_catalogue(self._settings), load_peers(self._settings)
        await self._pool.reload(catalogue)
        await self._peers.reload(peers)
        models = tuple(sorted(self._pool.catalogue.entries))
        self.reloaded.publish(CatalogueReloaded(models))
        _log.info("models reloaded", models=list(models))
