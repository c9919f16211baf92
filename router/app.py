"""The router's Litestar application: routes, error handlers, middleware, and the services' lifespan
(router/services.py) after the startup checks (router/startup.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from litestar import Litestar
from litestar.datastructures import State

from router.api import inference_routes, model_routes, stream_routes, webui_routes
from router.api.access import access_routes
from router.api.activity import activity_routes
from router.api.cors_proxy import cors_proxy_routes
from router.api.disclosure import exception_handlers
from router.api.downloads import download_routes
from router.api.lora import lora_routes
from router.api.ollama.routes import ollama_router
from router.api.tools import tool_routes
from router.observe.activity import Activity
from router.scheduling.leases import release_leases
from router.security.guard import ApiKeyAuth
from router.security.origins import OriginGate
from router.services import running_services
from router.settings import ServeSettings
from router.startup import plan_startup
from router.tools.toolbox import ToolBox, choose_builtin_tools
from router.workers.launcher import WorkerLauncher

__all__ = ["create_app"]


def create_app(settings: ServeSettings, launcher: WorkerLauncher | None = None) -> Litestar:
    """The router app; raises ``CatalogueError`` when the model sources are invalid or the
    startup models do not fit (router/startup.py)."""
    plan = plan_startup(settings)
    tools = ToolBox(
        choose_builtin_tools(settings.tools, settings.tools_allow_exec),
        settings.tools_root or Path.cwd(),
        settings.mcp_servers,
    )

    # The access-log wrapper outside the app (router/server.py) shares it: app.state.activity.
    activity = Activity()

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with running_services(settings, plan, tools, activity, launcher) as runtime:
            app.state.runtime = runtime
            yield

    auth = ApiKeyAuth.of(settings)
    body_limit = settings.body_limit
    handlers = {**exception_handlers, **body_limit.handlers()}
    return Litestar(
        route_handlers=[
            *model_routes,
            *download_routes,
            *inference_routes,
            *lora_routes,
            *stream_routes,
            *webui_routes,
            *access_routes,
            *activity_routes,
            *tool_routes,
            *cors_proxy_routes,
            ollama_router,
        ],
        exception_handlers=auth.exception_handlers(handlers),
        # Outermost: leases on models end with their request, whatever ends it. Then what a web
        # page may do (docs/security.md), which no key changes, before the key check.
        middleware=[release_leases, OriginGate(settings.cors), *auth.middleware()],
        lifespan=[lifespan],
        state=State({"auth": auth, "tools": tools, "activity": activity}),
        # Litestar checks Content-Length before reading and counts the bytes of a chunked
        # body as they come, so a larger body is refused before it is buffered.
        request_max_body_size=body_limit.size,
        logging_config=None,
        debug=False,
    )
