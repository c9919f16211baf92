"""The one place where the engine's errors get their HTTP status (docs/api.md, Errors).

Below the answer layer, code raises worker/host/errors.py's domain errors; here an
:class:`~worker.host.errors.InvalidInput` becomes a 400 ``invalid_request_error`` and an
:class:`~worker.host.errors.EngineFailure` a 500 ``server_error``, in the error JSON every route
answers with, as the router maps its scheduling errors in router/scheduling/answers.py.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response

from corral.http.errors import ApiError, ErrorEnvelope, error_response
from worker.host.errors import EngineError, InvalidInput

__all__ = ["as_api_error", "engine_error_response"]


def as_api_error(error: EngineError) -> ApiError:
    return ApiError(400 if isinstance(error, InvalidInput) else 500, error.message)


def engine_error_response(
    request: Request[Any, Any, Any], error: EngineError
) -> Response[ErrorEnvelope]:
    return error_response(as_api_error(error))
