"""The router's Litestar application: routes, error handlers and the registry's lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import structlog
from litestar import Litestar
from litestar.datastructures import State

from router.api import inference_routes, model_routes, webui_routes
from router.api.runtime import RouterRuntime
from router.catalogue import scan_catalogue
from router.errors import exception_handlers
from router.launcher import SubprocessLauncher, WorkerLauncher
from router.metrics import RequestCounter
from router.registry import ModelRegistry
from router.scheduler import Scheduler
from router.security import ApiKeyAuth, build_cors_config
from router.settings import ServeSettings

__all__ = ["create_app"]

_log = structlog.get_logger("corral.router")


def create_app(settings: ServeSettings, launcher: WorkerLauncher | None = None) -> Litestar:
    catalogue = scan_catalogue(settings.models_dir, settings.model_files)

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            registry = ModelRegistry(
                catalogue,
                launcher=launcher or SubprocessLauncher(),
                task_group=group,
                worker_args=settings.worker_args,
                stop_timeout=settings.stop_timeout,
            )
            app.state.runtime = RouterRuntime(
                settings, registry, Scheduler(registry, settings.models_max), RequestCounter()
            )
            _log.info("models available", models=sorted(catalogue))
            for path in settings.model_files:  # `-m FILE` loads at startup, as llama-server does
                registry.start(registry.get(path.stem))
            try:
                yield
            finally:
                await registry.stop_all()
                group.cancel_scope.cancel()

    auth = ApiKeyAuth(settings.api_keys)
    return Litestar(
        route_handlers=[*model_routes, *inference_routes, *webui_routes],
        exception_handlers=auth.exception_handlers(exception_handlers),
        middleware=auth.middleware(),
        cors_config=build_cors_config(settings.cors_origins),
        lifespan=[lifespan],
        state=State(),
        logging_config=None,
        debug=False,
    )
