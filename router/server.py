"""Running the router: uvicorn in this process, stopping every worker on SIGINT/SIGTERM.

uvicorn turns those signals into a graceful shutdown, which runs the app's lifespan exit, which
stops the workers (exit command, then SIGTERM/SIGKILL after the stop timeout). Before it waits
for open responses, MCP tool calls under way are cancelled (docs/operations.md): unlike an
inference request, a slow tool has nothing worth finishing once the router is going away.
"""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import replace
from pathlib import Path

import structlog
import uvicorn
from litestar import Litestar
from litestar.types import ASGIApp

from corral.children.environment import MAX_BODY_ENV
from corral.http.cors import CorsHeaders
from corral.http.hosts import host_check, listens_on_loopback_only
from corral.http.sockets import bind_hosts
from corral.hub.cache_scan import resolve_cached_model, scan_cache
from corral.hub.remote_preset import cached_preset
from corral.logs import configure_logging, verbosity_level
from router.api.mounts import ApiPrefix, StaticFiles
from router.app import create_app
from router.catalogue.catalogue import CatalogueError
from router.cli.hub_download import DownloadFailed, download_model
from router.observe.access_log import AccessLog
from router.observe.activity import Activity
from router.observe.tracing import tracer_for
from router.security.connections import ConnectionLimits, guarded_protocol
from router.security.guard import log_keys, warn_if_exposed
from router.settings import ServeSettings
from router.tools.toolbox import ToolBox

__all__ = ["serve"]

_log = structlog.get_logger("corral.router")


def _fetch(reference: str, cache_dir: Path, token: str | None) -> None:
    _log.info("downloading a --hf-repo model before serving", model=reference)
    try:
        name = download_model(reference, cache_dir, token=token, progress=sys.stderr)
    except DownloadFailed as exc:
        _log.error("cannot download a --hf-repo model", model=reference, error=str(exc))
        raise SystemExit(1) from None
    _log.info("downloaded", model=name)


def _download_missing(settings: ServeSettings) -> ServeSettings:
    """``-hf ORG/REPO[:TAG]`` of a model not in the cache, and its ``-hfd`` draft: download them
    first, as llama-server does, through the same download child as ``corral pull`` (progress
    on stderr).

    A repository with a root ``preset.ini`` is a remote preset (:mod:`corral.hub.remote_preset`):
    the settings that come back serve it as ``--models-preset``, in router mode, naming the
    repository so that the file may set only upstream's whitelist of keys (docs/security.md),
    whether just downloaded or cached (``--offline`` too).
    """
    cache_dir = settings.cache_dir
    if cache_dir is None:
        return settings  # create_app then says the model is missing
    # --offline: only implicit fetches are off, and these are (create_app says so).
    draft = settings.model_options.get("spec-draft-hf")
    if (
        draft
        and not settings.offline
        and resolve_cached_model(scan_cache(cache_dir), draft) is None
    ):
        _fetch(draft, cache_dir, settings.hf_token)
    for reference in settings.hf_repos:
        repo = reference.partition(":")[0]
        cached = resolve_cached_model(scan_cache(cache_dir), reference)
        preset = cached_preset(cache_dir, repo)
        if cached is None and preset is None and not settings.offline:
            _fetch(reference, cache_dir, settings.hf_token)
            preset = cached_preset(cache_dir, repo)
        if preset is not None:
            _log.warning("using preset.ini from a hub repository", repo=repo, preset=str(preset))
            settings = replace(
                settings,
                models_preset=preset,
                models_preset_repo=repo,
                hf_repos=tuple(r for r in settings.hf_repos if r != reference),
                single_model=False,
            )
    return settings


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
    # Inherited by every worker (docs/protocol.md §8): none refuses a body the router accepted.
    os.environ[MAX_BODY_ENV] = str(settings.max_body)
    settings = _download_missing(settings)
    try:
        app = create_app(settings)
    except CatalogueError as exc:
        _log.error("invalid model catalogue", error=str(exc))
        raise SystemExit(1) from None
    # Bound here rather than by uvicorn so that `--port 0` works: the log says the real port.
    try:
        sockets = bind_hosts(settings.host, settings.port, reuse_port=settings.reuse_port)
    except OSError as exc:
        _log.error("cannot listen", host=settings.host, port=settings.port, error=str(exc))
        raise SystemExit(1) from None
    # Outermost, the Host check (DNS rebinding): before CORS, so no name but the router's own
    # gets even a preflight's answer.
    served = host_check(
        CorsHeaders(_mounted(app, settings), settings.cors_origins),
        settings.allowed_hosts,
        loopback_only=listens_on_loopback_only(sockets),
    )
    config = uvicorn.Config(
        served,
        log_config=None,
        ssl_keyfile=settings.ssl_key_file,
        ssl_certfile=settings.ssl_cert_file,
        lifespan="on",
        # Deadlines for receiving a request, and the connection cap (docs/security.md).
        http=guarded_protocol(ConnectionLimits.from_environment(settings.max_connections)),
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
