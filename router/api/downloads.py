"""``POST /models`` (download from the hub) and ``DELETE /models`` (remove from the cache).

docs/protocol.md §3; the rules for what a removal deletes are in :mod:`corral.hub.removal`.
Every model whose files resolve to what a removal deletes (the entry named, a preset section on
the same file, a model drafting with it) is stopped first, and none of them loads again until
the catalogue has been read anew (:mod:`router.availability.load_holds`, docs/security.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
import structlog
from litestar import Request, delete, post
from litestar.params import FromQuery

from corral.http.errors import ApiError
from corral.hub.removal import NotInCache, files_to_remove, remove_cached_model
from router.api.models import model_in_body
from router.api.runtime import RouterRuntime, runtime
from router.catalogue.catalogue import CatalogueEntry, CatalogueError
from router.security.api_keys import admin_only

__all__ = ["download_routes", "remove_cache_model"]

_log = structlog.get_logger("corral.downloads")

AnyRequest = Request[Any, Any, Any]


@post("/models", status_code=200, opt=admin_only())
async def start_download(request: AnyRequest) -> dict[str, bool]:
    """Start fetching ``org/repo[:TAG]``; answers at once, progress goes to ``/models/sse``."""
    runtime(request).downloads.start(model_in_body(await request.body()))
    return {"success": True}


def _inside(path: Path, directory: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(directory))


async def remove_cache_model(rt: RouterRuntime, name: str) -> None:
    entry = rt.pool.catalogue.resolve(name)
    if entry is None:
        raise ApiError(404, f"model '{name}' not found")
    cache_dir = rt.settings.cache_dir
    if entry.source != "cache" or cache_dir is None:
        raise ApiError(
            400, f"model '{entry.name}' is not removable: only hub-cache models are (it is "
            f"from {entry.source})"
        )  # fmt: skip
    # The entry's path came from scanning the cache; one that leads elsewhere is not ours.
    if not _inside(entry.path.parent, cache_dir):
        raise ApiError(400, f"model '{entry.name}' is not inside the hub cache {cache_dir}")
    try:
        doomed = await anyio.to_thread.run_sync(files_to_remove, cache_dir, entry.name)
    except NotInCache:
        doomed = set()  # gone already (removed by hand, or by another router)
    entries = list(rt.pool.catalogue.entries.values())
    users = {entry.name} | await anyio.to_thread.run_sync(_users_of, entries, doomed)
    with rt.pool.holds.holding(users):
        async with anyio.create_task_group() as group:
            for name in users:
                for copy in rt.pool.copies(name):  # every copy (``replicas``) reads the files
                    group.start_soon(rt.pool.stop, copy)
        if others := sorted(users - {entry.name}):
            _log.info("stopped the models that load a removed model's files", model=entry.name,
                      others=others)  # fmt: skip
        try:
            removed = await anyio.to_thread.run_sync(remove_cached_model, cache_dir, entry.name)
        except NotInCache:
            removed = []
        _log.info("model removed", model=entry.name, files=[str(path) for path in removed])
        try:
            await rt.reloader.reload()
        except CatalogueError as exc:  # e.g. a preset section still names the removed model
            _log.error("reload after a removal failed", model=entry.name, error=str(exc))
    rt.pool.events.publish(entry.name, "model_remove")


def _users_of(entries: Iterable[CatalogueEntry], doomed: set[Path]) -> set[str]:
    """The entries that load one of the ``doomed`` files, by real path (blocking: a thread)."""
    return {
        entry.name
        for entry in entries
        if any(Path(os.path.realpath(path)) in doomed for path in entry.files())
    }


@delete("/models", status_code=200, opt=admin_only())
async def delete_model(request: AnyRequest, model: FromQuery[str | None] = None) -> dict[str, bool]:
    """Remove a cache model's files (stopping it first), or cancel and drop a download."""
    if not model:
        raise ApiError(400, "model must be a non-empty string")
    rt = runtime(request)
    download = rt.downloads.find(model)
    if download is not None:
        await rt.downloads.cancel(download)  # its partial files stay, for a later resume
        rt.downloads.forget(download)
        rt.pool.events.publish(download.name, "model_remove")
        return {"success": True}
    await remove_cache_model(rt, model)
    return {"success": True}


download_routes = [start_download, delete_model]
