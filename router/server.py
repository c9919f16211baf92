"""Running the router: uvicorn in this process, stopping every worker on SIGINT/SIGTERM.

uvicorn turns those signals into a graceful shutdown, which runs the app's lifespan exit, which
stops the workers (exit command, then SIGTERM/SIGKILL after the stop timeout). Before it waits
for open responses, MCP tool calls under way are cancelled (docs/operations.md): unlike an
inference request, a slow tool has nothing worth finishing once the router is going away.
"""

from __future__ import annotations

import os
import socket

import structlog
import uvicorn
from litestar import Litestar
from litestar.types import ASGIApp

from corral.http.cors import CorsHeaders
from corral.http.hosts import host_check, listens_on_loopback_only
from corral.http.sockets import bind_hosts
from corral.logs import configure_logging, verbosity_level
from router.api.mounts import ApiPrefix, StaticFiles
from router.app import create_app
from router.catalogue.catalogue import CatalogueError
from router.observe.access_log import AccessLog
from router.observe.activity import Activity
from router.observe.tracing import tracer_for
from router.security.connections import guarded_protocol
from router.security.guard import log_keys, warn_if_exposed
from router.settings import ServeSettings
from router.startup import fetch_missing
from router.tools.toolbox import ToolBox

__all__ = ["serve"]

_log = structlog.get_logger("corral.router")


class _RouterServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, tools: ToolBox) -> None:
        super().__init__(config)
        self._tools = tools

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._tools.cancel_calls()
        await super().shutdown(sockets)


def _mounted(app: Litestar, settings: ServeSettings) -> ASGIApp:
    """The app under ``--api-prefix``, behind ``--path``'s files; logged with the whole path,
    each request recorded for the activity view, logged or not, and traced when asked for."""
    activity: Activity = app.state.activity
    mounted: ASGIApp = app
    if settings.static_path is not None:
        mounted = StaticFiles(mounted, settings.static_path)
    mounted = ApiPrefix(mounted, settings.api_prefix)
    tracer = tracer_for(settings.otel_endpoint, os.environ)
    return AccessLog(mounted, activity.history, log=settings.log_requests, finished=tracer)


def serve(settings: ServeSettings) -> None:
    json = None if settings.log_format is None else settings.log_format == "json"
    # -lv, or --verbose (a per-model option too: llama-server's "log everything"); at info the
    # banners of uvicorn are debug, as the workers' are (router/workers/child_logs.py).
    verbose = settings.model_options.get("verbose") == "true"
    level = verbosity_level(4 if verbose else settings.log_verbosity)
    configure_logging(json=json, level=level, debug_loggers=("uvicorn.error",))
    warn_if_exposed(settings)
    log_keys(settings)
    for flag in settings.no_effect_flags:
        _log.warning("flag accepted for llama-server compatibility has no effect here", flag=flag)
    settings.body_limit.pass_to_workers(os.environ)
    settings = fetch_missing(settings)
    try:
        app = create_app(settings)
    except CatalogueError as exc:
        _log.error("invalid model catalogue", error=str(exc))
        raise SystemExit(1) from None
    # Bound here rather than by uvicorn so that `--port 0` works: the log says the real port.
    listen = settings.listen
    try:
        sockets = bind_hosts(listen)
    except OSError as exc:
        _log.error("cannot listen", host=listen.host, port=listen.port, error=str(exc))
        raise SystemExit(1) from None
    # Outermost, the Host check (DNS rebinding): before CORS, so no name but the router's own
    # gets even a preflight's answer.
    served = host_check(
        CorsHeaders(_mounted(app, settings), settings.cors),
        settings.hosts,
        loopback_only=listens_on_loopback_only(sockets),
    )
    config = uvicorn.Config(
        served,
        log_config=None,
        ssl_keyfile=settings.ssl_key_file,
        ssl_certfile=settings.ssl_cert_file,
        lifespan="on",
        # Deadlines for receiving a request, and the connection cap (docs/security.md).
        http=guarded_protocol(settings.connection_limits),
        # Long streams would otherwise hold shutdown open indefinitely.
        timeout_graceful_shutdown=5,
    )
    for sock in sockets:
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if sock.family == socket.AF_INET6 else host
        scheme = "https" if settings.ssl_cert_file else "http"
        _log.info("corral listening", url=f"{scheme}://{shown}:{port}{settings.api_prefix}")
    tools: ToolBox = app.state.tools
    _RouterServer(config, tools).run(sockets=sockets)
