"""What every router handler needs, stored once on the app (``app.state.runtime``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import structlog
from litestar import Request

from router.api.metrics import RequestCounter
from router.catalogue.catalogue import Catalogue, CatalogueError, build_catalogue
from router.catalogue.presets import PresetError
from router.relay.conversations import ConversationOwners
from router.relay.peer_config import PeerConfig, load_peer_configs
from router.relay.peers import PeerSet
from router.scheduling.scheduler import Scheduler
from router.settings import ServeSettings
from router.single_model import single_model_catalogue
from router.workers.download_jobs import DownloadJobs
from router.workers.pool import WorkerPool

__all__ = ["RouterRuntime", "load_catalogue", "load_peers", "runtime"]

_log = structlog.get_logger("corral.router")


def load_catalogue(settings: ServeSettings) -> Catalogue:
    """Read every model source the settings name; raises ``CatalogueError``."""
    catalogue = build_catalogue(
        models_dir=settings.models_dir,
        model_files=settings.model_files,
        mmproj_file=settings.mmproj_file,
        preset_file=settings.models_preset,
        cache_dir=settings.cache_dir,
        cli_options=settings.model_options,
    )
    return single_model_catalogue(catalogue, settings)


def load_peers(settings: ServeSettings) -> tuple[PeerConfig, ...]:
    """The preset's ``[peer NAME]`` sections; raises ``CatalogueError`` as a bad model would."""
    try:
        return load_peer_configs(settings.models_preset)
    except PresetError as error:
        raise CatalogueError(str(error)) from None


@dataclass(frozen=True, slots=True)
class RouterRuntime:
    settings: ServeSettings
    pool: WorkerPool
    scheduler: Scheduler
    requests: RequestCounter
    downloads: DownloadJobs
    conversations: ConversationOwners = field(default_factory=ConversationOwners)
    peers: PeerSet = field(default_factory=PeerSet)

    def __post_init__(self) -> None:
        self.pool.exit_listeners.append(self.conversations.worker_exited)

    async def reload(self) -> None:
        """Re-read the model sources (``?reload=1``, SIGHUP, a finished download) and list the
        peers again; nothing changes unless both the models and the peers read well."""
        catalogue, peers = load_catalogue(self.settings), load_peers(self.settings)
        await self.pool.reload(catalogue)
        await self.peers.reload(peers)
        self.downloads.forget_finished()  # ended downloads leave the list, as upstream
        _log.info("models reloaded", models=sorted(self.pool.catalogue.entries))


def runtime(request: Request[Any, Any, Any]) -> RouterRuntime:
    value: RouterRuntime = request.app.state.runtime
    return value
