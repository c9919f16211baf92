"""Ollama's errors: ``{"error": "…"}`` with the status, on every ``/api/*`` route.

Which status and message an exception answers with is the core's triage
(:func:`corral.http.errors.triage`), told as the caller may read it
(:func:`router.api.disclosure.error_for_caller`); this module only gives it Ollama's shape.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.types import ExceptionHandlersMap

from corral.http.errors import triage
from router.api.disclosure import error_for_caller

__all__ = ["ollama_exception_handlers"]


def _ollama_error(request: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, str]]:
    error = error_for_caller(request.scope, triage(request, exc))
    return Response(
        {"error": error.message}, status_code=error.status, headers=error.headers or None
    )


# On the /api router: the app's handlers for keys, scopes and limits stay (more specific).
ollama_exception_handlers: ExceptionHandlersMap = {Exception: _ollama_error}
