"""The error JSON of docs/protocol.md §3, used by the router and by workers.

Handlers return errors as values: raise :class:`ApiError` (or let Litestar raise its own HTTP
exceptions) and the exception handlers below render ``{"error": {code, message, type}}``. Anything
else becomes a 500 whose traceback goes to the log, never to the client.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import msgspec
import structlog
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.response.base import ASGIResponse
from litestar.types import ExceptionHandlersMap

__all__ = [
    "ApiError",
    "ErrorBody",
    "ErrorEnvelope",
    "decode_body",
    "error_response",
    "exception_handlers",
    "json_response",
    "sse_error_event",
    "triage",
]

_TYPE_BY_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "invalid_request_error",  # the request did not arrive in time (a client's fault)
    413: "invalid_request_error",
    414: "invalid_request_error",
    429: "rate_limit_error",
    431: "invalid_request_error",
    500: "server_error",
    501: "not_supported_error",
    503: "unavailable_error",
}

_log = structlog.get_logger("corral.http.errors")


class ErrorBody(msgspec.Struct):
    code: int
    message: str
    type: str


class ErrorEnvelope(msgspec.Struct):
    error: ErrorBody


class ApiError(Exception):
    """An error the client should see, with its HTTP status and error type (docs/protocol.md §3)."""

    def __init__(
        self,
        status: int,
        message: str,
        error_type: str | None = None,
        *,
        headers: Mapping[str, str] | None = None,  # e.g. Retry-After on a 503
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = error_type or _TYPE_BY_STATUS.get(status, "server_error")
        self.headers = dict(headers or {})

    def envelope(self) -> ErrorEnvelope:
        return ErrorEnvelope(ErrorBody(self.status, self.message, self.type))


def error_response(error: ApiError) -> Response[ErrorEnvelope]:
    return Response(error.envelope(), status_code=error.status, headers=error.headers or None)


def json_response(value: Any, status: int = 200) -> ASGIResponse:
    """A JSON answer from a handler that may also return a proxied (ASGI) response.

    Litestar picks its response handling from the return annotation; a union with a plain
    value would make it try to serialise the proxied response, so such handlers return this.
    """
    return ASGIResponse(
        body=msgspec.json.encode(value), status_code=status, media_type="application/json"
    )


def sse_error_event(error: ApiError) -> bytes:
    """An error that happens after a stream has started can only travel as an SSE event."""
    return b"data: " + msgspec.json.encode(error.envelope()) + b"\n\n"


def triage(request: Request[Any, Any, Any], exc: Exception) -> ApiError:
    """What an exception answers: its status, message and headers (docs/protocol.md §3).

    The one place that decides it, for every API shape: the core's error JSON below and
    Ollama's ``{"error": "…"}`` (router/api/ollama/errors.py) only spell the answer. Anything
    that is not an HTTP error is a 500 whose traceback goes to the log, never to the client.
    """
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, ValidationException):
        detail = (
            "; ".join(str(item.get("message", item)) for item in exc.extra or [])
            if isinstance(exc.extra, list)
            else ""
        )
        return ApiError(400, detail or exc.detail)
    if isinstance(exc, HTTPException):
        return ApiError(exc.status_code, exc.detail, headers=exc.headers)
    _log.exception("unhandled error", path=request.url.path)
    return ApiError(500, "internal server error")


def _from_exception(request: Request[Any, Any, Any], exc: Exception) -> Response[ErrorEnvelope]:
    return error_response(triage(request, exc))


exception_handlers: ExceptionHandlersMap = {Exception: _from_exception}


T = TypeVar("T")


def decode_body(body: bytes, type_: type[T]) -> T:
    """Decode a JSON request body; malformed JSON and wrong fields are 400s naming the problem."""
    try:
        return msgspec.json.decode(body, type=type_)
    except msgspec.ValidationError as exc:
        raise ApiError(400, f"invalid request: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ApiError(400, f"invalid JSON in request body: {exc}") from None
