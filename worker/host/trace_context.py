"""A request's W3C ``traceparent`` (the router sends its own, docs/operations.md, Traces) in
the worker's log context: every line the worker logs while it answers the request carries the
trace's ``trace_id`` and the router's span (``parent_span_id``), so a log line leads to its
trace. The worker emits no spans of its own."""

from __future__ import annotations

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send
from structlog.contextvars import bound_contextvars

from corral.http.scope_headers import scope_header
from corral.http.trace_context import parse_traceparent

__all__ = ["with_trace_context"]


def with_trace_context(app: ASGIApp) -> ASGIApp:
    """``app`` with each HTTP request's trace ids bound to structlog's context while it runs."""

    async def call(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP:
            header = scope_header(scope, b"traceparent")
            parent = parse_traceparent(header) if header is not None else None
            if parent is not None:
                with bound_contextvars(
                    trace_id=f"{parent.trace_id:032x}", parent_span_id=f"{parent.span_id:016x}"
                ):
                    await app(scope, receive, send)
                return
        await app(scope, receive, send)

    return call
