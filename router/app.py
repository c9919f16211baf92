"""The router's Litestar application: routes, error handlers and the worker pool's lifespan."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import structlog
from litestar import Litestar
from litestar.datastructures import State

from corral.http.errors import exception_handlers
from corral.hub.cache_scan import resolve_cached_model, scan_cache
from router.api import inference_routes, model_routes, stream_routes, webui_routes
from router.api.access import access_routes
from router.api.cors_proxy import cors_proxy_routes
from router.api.downloads import download_routes
from router.api.lora import lora_routes
from router.api.metrics import RequestCounter
from router.api.runtime import RouterRuntime, load_catalogue, load_peers
from router.api.tools import tool_routes
from router.catalogue.catalogue import Catalogue, CatalogueEntry, CatalogueError
from router.catalogue.file_check import model_file_problem
from router.scheduling.leases import release_leases
from router.scheduling.scheduler import Scheduler
from router.security.guard import ApiKeyAuth
from router.security.request_limits import body_limit_handlers
from router.settings import ServeSettings
from router.tools.toolbox import ToolBox, choose_builtin_tools
from router.workers.download_jobs import DownloadJobs
from router.workers.launcher import SubprocessLauncher, WorkerLauncher
from router.workers.memory_budget import MemoryBudget
from router.workers.model_state import ModelState
from router.workers.pool import FAKE_TIMING_SECONDS, WorkerPool
from router.workers.spares import SpareWorkers
from router.workers.stall_watchdog import StallWatchdog

__all__ = ["create_app"]

_log = structlog.get_logger("corral.router")


async def _reload_on_sighup(runtime: RouterRuntime) -> None:
    """SIGHUP only enqueues a reload; reloads run here, one at a time."""
    with anyio.open_signal_receiver(signal.SIGHUP) as signals:
        async for _ in signals:
            try:
                await runtime.reload()
            except CatalogueError as exc:  # keep serving the old catalogue
                _log.error("reload failed, keeping the current models", error=str(exc))


def _cached_entry(catalogue: Catalogue, settings: ServeSettings, reference: str) -> CatalogueEntry:
    """``--hf-repo org/repo[:TAG]``: in the hub cache (``serve`` downloaded it if it could)."""
    cached = None
    if settings.cache_dir is not None:
        cached = resolve_cached_model(scan_cache(settings.cache_dir), reference)
    # By alias: in single-model mode an --alias renames the model (router.single_model).
    entry = catalogue.resolve(cached.name) if cached is not None else None
    if entry is None:
        why = "--offline forbids downloading it" if settings.offline else "it was not downloaded"
        raise CatalogueError(
            f"--hf-repo {reference}: not in the hub cache ({settings.cache_dir}); {why} "
            f"(corral pull {reference} fetches it)"
        )
    return entry


def create_app(settings: ServeSettings, launcher: WorkerLauncher | None = None) -> Litestar:
    """The router app; raises ``CatalogueError`` when the model sources are invalid."""
    catalogue = load_catalogue(settings)
    peers = load_peers(settings)
    startup = [e for e in catalogue.entries.values() if e.load_on_startup]
    startup += [_cached_entry(catalogue, settings, reference) for reference in settings.hf_repos]
    if 0 < settings.models_max < len(startup):
        raise CatalogueError(
            f"{len(startup)} models are to load on startup but --models-max is "
            f"{settings.models_max}"
        )
    memory = settings.models_memory_max
    budget = MemoryBudget(memory) if memory > 0 else None
    if budget is not None and len(startup) > 1:  # one model alone may exceed the budget
        needed = sum(budget.expected(ModelState.unloaded(entry)) for entry in startup)
        if needed > budget.limit:
            raise CatalogueError(
                f"{len(startup)} models are to load on startup, expected to hold "
                f"{needed >> 20} MiB, but --models-memory-max is {budget.limit >> 20} MiB"
            )

    tools = ToolBox(
        choose_builtin_tools(settings.tools, settings.tools_allow_exec),
        settings.tools_root or Path.cwd(),
        settings.mcp_servers,
    )

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with tools.running(), anyio.create_task_group() as group:
            spares = SpareWorkers(
                launcher or SubprocessLauncher(),
                settings.models_spare,
                group,
                room=lambda held: (
                    budget is None
                    or budget.spare_fits([s for s in pool.models.values() if s.running], held)
                ),
            )
            if budget is not None:
                budget.spares = spares.held
            pool = WorkerPool(
                catalogue,
                launcher=spares,
                task_group=group,
                timeout=settings.timeout,
                check_file=model_file_problem,
                fake_timing=0.0 if settings.single_model else FAKE_TIMING_SECONDS,
            )
            scheduler = Scheduler(pool, settings.models_max, budget, max_queue=settings.max_queue)
            watchdog = StallWatchdog(
                pool, stall_timeout=settings.stall_timeout, load_timeout=settings.load_timeout
            )
            downloads = DownloadJobs(
                pool,
                settings=settings,
                task_group=group,
                reload=lambda: runtime.reload(),  # bound once runtime exists, below
            )
            app.state.runtime = runtime = RouterRuntime(
                settings, pool, scheduler, RequestCounter(), downloads
            )
            _log.info("models available", models=sorted(catalogue.entries))
            runtime.peers.start(group, peers)  # listed in the background: never in the way
            for entry in startup:
                pool.start(pool.models[entry.name])
            pool.exit_listeners.append(lambda _: spares.fill())  # room may have come free
            pool.answer_listeners.append(lambda state: spares.answered(state.process))
            spares.fill()
            group.start_soon(scheduler.unload_expired)
            group.start_soon(watchdog.run, group)
            group.start_soon(_reload_on_sighup, runtime)
            group.start_soon(downloads.sweep_stale_partials)
            try:
                yield
            finally:
                spares.close()
                await downloads.cancel_all()
                await pool.stop_all()
                await runtime.peers.aclose()
                group.cancel_scope.cancel()

    auth = ApiKeyAuth(settings.api_keys)
    handlers = {**exception_handlers, **body_limit_handlers(settings.max_body)}
    return Litestar(
        route_handlers=[
            *model_routes,
            *download_routes,
            *inference_routes,
            *lora_routes,
            *stream_routes,
            *webui_routes,
            *access_routes,
            *tool_routes,
            *cors_proxy_routes,
        ],
        exception_handlers=auth.exception_handlers(handlers),
        # Outermost: leases on models end with their request, whatever ends it.
        middleware=[release_leases, *auth.middleware()],
        lifespan=[lifespan],
        state=State({"auth": auth, "tools": tools}),
        # Litestar checks Content-Length before reading and counts the bytes of a chunked
        # body as they come, so a larger body is refused before it is buffered.
        request_max_body_size=settings.max_body,
        logging_config=None,
        debug=False,
    )
