"""Ollama's errors: ``{"error": "…"}`` with the status, on every ``/api/*`` route."""

from __future__ import annotations

from typing import Any

import structlog
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.types import ExceptionHandlersMap

from corral.http.errors import ApiError

__all__ = ["ollama_exception_handlers"]

_log = structlog.get_logger("corral.ollama")


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
