"""The Web UI's files, served at ``/`` (public; SPEC §3)."""

from __future__ import annotations

from pathlib import Path

from litestar import Response, get
from litestar.enums import MediaType

__all__ = ["webui_routes"]

WEBUI_DIR = Path(__file__).resolve().parents[2] / "webui"


@get("/", include_in_schema=False)
async def index() -> Response[bytes]:
    # Read per request: the page is small, and edits show up without a restart.
    return Response((WEBUI_DIR / "index.html").read_bytes(), media_type=MediaType.HTML)


webui_routes = [index]
