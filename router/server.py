"""Running the router: uvicorn in this process, stopping every worker on SIGINT/SIGTERM.

uvicorn turns those signals into a graceful shutdown, which runs the app's lifespan exit, which
stops the workers (exit command, then SIGTERM/SIGKILL after the stop timeout).
"""

from __future__ import annotations

import structlog
import uvicorn

from router.app import create_app
from router.catalogue import CatalogueError
from router.logs import configure_logging
from router.settings import ServeSettings

__all__ = ["serve"]

_log = structlog.get_logger("corral.router")


def serve(settings: ServeSettings) -> None:
    configure_logging()
    try:
        app = create_app(settings)
    except CatalogueError as exc:
        _log.error("invalid model catalogue", error=str(exc))
        raise SystemExit(1) from None
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        lifespan="on",
        # Long streams would otherwise hold shutdown open indefinitely.
        timeout_graceful_shutdown=5,
    )
    _log.info("corral listening", url=f"http://{settings.host}:{settings.port}")
    uvicorn.Server(config).run()
