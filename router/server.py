"""Running the router: uvicorn in this process, stopping every worker on SIGINT/SIGTERM.

uvicorn turns those signals into a graceful shutdown, which runs the app's lifespan exit, which
stops the workers (exit command, then SIGTERM/SIGKILL after the stop timeout).
"""

from __future__ import annotations

import socket

import structlog
import uvicorn

from corral.logs import configure_logging
from corral.sockets import bind_tcp
from router.app import create_app
from router.catalogue import CatalogueError
from router.request_limits import BoundedHttpToolsProtocol
from router.security import warn_if_exposed
from router.settings import ServeSettings

__all__ = ["serve"]

_log = structlog.get_logger("corral.router")


def serve(settings: ServeSettings) -> None:
    configure_logging()
    warn_if_exposed(settings)
    try:
        app = create_app(settings)
    except CatalogueError as exc:
        _log.error("invalid model catalogue", error=str(exc))
        raise SystemExit(1) from None
    # Bound here rather than by uvicorn so that `--port 0` works: the log says the real port.
    try:
        sock = bind_tcp(settings.host, settings.port)
    except OSError as exc:
        _log.error("cannot listen", host=settings.host, port=settings.port, error=str(exc))
        raise SystemExit(1) from None
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_config=None,
        lifespan="on",
        http=BoundedHttpToolsProtocol,
        # Long streams would otherwise hold shutdown open indefinitely.
        timeout_graceful_shutdown=5,
    )
    host = f"[{settings.host}]" if sock.family == socket.AF_INET6 else settings.host
    _log.info("corral listening", url=f"http://{host}:{port}")
    uvicorn.Server(config).run(sockets=[sock])
