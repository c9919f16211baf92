"""The Web UI's files (docs/protocol.md §3): the page at ``/`` and ``/assets/…``, both public.

The UI is plain files, no build step: ``webui/index.html`` and ES modules and CSS under
``webui/assets/``, the top-level ``webui`` package's data (``pyproject.toml``), found where that
package is installed, not in a checkout, so an installed wheel serves them too. Its
client-side routes live in the URL's fragment (``/#/c/<id>``, ``/#/models``), so the page has
exactly one address and the router needs no catch-all fallback: a fallback route would match
unknown API paths too, and those must keep their JSON 404 (or the 401 a keyed router gives
callers without a key). Only these two routes serve UI files.

Files are read per request (they are small, and edits show up without a restart). Their names
carry no content hash, so every answer says ``no-cache`` and carries an ETag: browsers
revalidate and get a 304 while nothing changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from litestar import Request, Response, get
from litestar.params import FromPath

from corral.http.errors import ApiError
from webui import WEBUI_DIR

__all__ = ["ASSETS_DIR", "CONTENT_SECURITY_POLICY", "WEBUI_DIR", "webui_routes"]

ASSETS_DIR: Final = WEBUI_DIR / "assets"

# Litestar adds "; charset=utf-8" to text/* types itself.
_CONTENT_TYPES: Final = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".css": "text/css",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".webmanifest": "application/manifest+json",
    ".woff2": "font/woff2",
    ".txt": "text/plain",
}

# The page only talks to its own origin and runs only its own scripts. img-src leaves out remote
# hosts on purpose: a model's Markdown could otherwise make the browser fetch an attacker's URL
# with data in it (the UI renders Markdown images as links, so nothing is lost).
CONTENT_SECURITY_POLICY: Final = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)

AnyRequest = Request[Any, Any, Any]


def _etag(path: Path) -> str:
    stat = path.stat()
    return f'W/"{stat.st_size:x}-{stat.st_mtime_ns:x}"'


def _file_response(request: AnyRequest, path: Path, extra: dict[str, str]) -> Response[bytes]:
    etag = _etag(path)
    headers = {
        "Cache-Control": "no-cache",
        "ETag": etag,
        "X-Content-Type-Options": "nosniff",
        **extra,
    }
    if request.headers.get("if-none-match") == etag:
        return Response(b"", status_code=304, headers=headers)
    media_type = _CONTENT_TYPES.get(path.suffix.lower(), "application/octet-stream")
    return Response(path.read_bytes(), media_type=media_type, headers=headers)


@get("/", include_in_schema=False)
async def index(request: AnyRequest) -> Response[bytes]:
    headers = {"Content-Security-Policy": CONTENT_SECURITY_POLICY, "Referrer-Policy": "no-referrer"}
    return _file_response(request, WEBUI_DIR / "index.html", headers)


def _asset_path(requested: Path) -> Path:
    """The file under ``ASSETS_DIR`` for a request path, or a 404 for anything else.

    Dot segments, hidden names and anything resolving (through links too) outside the folder
    are refused, whatever the ASGI server decoded from ``%2e`` and friends.
    """
    parts = [part for part in requested.parts if part not in ("/", "")]
    if not parts or any(part.startswith(".") or "\\" in part or "\0" in part for part in parts):
        raise ApiError(404, "not found")
    root = ASSETS_DIR.resolve()
    path = root.joinpath(*parts).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        raise ApiError(404, "not found")
    return path


@get("/assets/{path:path}", include_in_schema=False)
async def asset(request: AnyRequest, path: FromPath[Path]) -> Response[bytes]:
    return _file_response(request, _asset_path(path), {})


webui_routes = [index, asset]
