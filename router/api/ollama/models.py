"""Which model an Ollama request names, and Ollama's errors (``{"error": "…"}``).

Every ``/api/*`` handler finds its model here: a 404 in Ollama's words when there is none.
"""

from __future__ import annotations

from typing import Any

import structlog
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.types import ExceptionHandlersMap

from corral.http.errors import ApiError
from router.api.ollama.names import resolve
from router.api.runtime import RouterRuntime
from router.catalogue.catalogue import CatalogueEntry
from router.single_model import single_model_target

__all__ = ["find_model", "ollama_exception_handlers", "required"]

_log = structlog.get_logger("corral.ollama")


def find_model(rt: RouterRuntime, name: str) -> CatalogueEntry:
    """The catalogue entry an Ollama name means (in single-model mode, the one model)."""
    name = required(name, "model")
    target = single_model_target(rt.settings, rt.pool.catalogue, name) or name
    entry = resolve(rt.pool.catalogue, rt.ollama_copies, target)
    if entry is None:
        raise ApiError(404, f"model '{name}' not found")
    return entry


def required(value: str, field: str) -> str:
    if not value:
        raise ApiError(400, f"{field} is required")
    return value


def _ollama_error(request: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, str]]:
    if isinstance(exc, ApiError):
        status, message, headers = exc.status, exc.message, exc.headers or None
    elif isinstance(exc, ValidationException):
        status, message, headers = 400, str(exc.detail), None
    elif isinstance(exc, HTTPException):
        status, message, headers = exc.status_code, str(exc.detail), exc.headers
    else:
        _log.exception("unhandled error", path=request.url.path)
        status, message, headers = 500, "internal server error", None
    return Response({"error": message}, status_code=status, headers=headers)


# On the /api router: the app's handlers for keys, scopes and limits stay (more specific).
ollama_exception_handlers: ExceptionHandlersMap = {Exception: _ollama_error}
