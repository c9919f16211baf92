"""A traced request's ids and HTTP facts (docs/operations.md, Traces): the trace and root span
ids, told to the worker at dispatch (``traceparent``) and given to the root span when the
request's record (router/observe/requests.py, shared with the access log and the activity view)
is made into spans after it ended (:mod:`router.observe.tracing.spans`).

Nothing here imports the OpenTelemetry SDK: the relay calls :func:`with_router_traceparent`
for traced requests only, and a router without tracing never imports the SDK.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from litestar.types import Scope

from corral.http.trace_context import TraceParent, parse_traceparent
from router.observe.requests import RequestRecord

__all__ = ["HttpFacts", "TraceIds", "trace_ids", "with_router_traceparent"]

# Span ids are derived from the request's id with this process's own secret, so that the id the
# worker is told (at dispatch) and the root span's (built at the end) agree without storing one,
# and a router restarted with ids counted from 1 again never repeats a trace.
_SALT = secrets.token_bytes(16)


@dataclass(frozen=True, slots=True)
class TraceIds:
    trace_id: int
    span_id: int  # the router's root span: the worker's parent
    parent_span_id: int | None  # the client's span, when it sent a valid traceparent
    flags: int

    def traceparent(self) -> bytes:
        return TraceParent(self.trace_id, self.span_id, self.flags).header()


def trace_ids(request_id: str, trace_parent: str | None) -> TraceIds:
    """The ids of a request's trace: the client's trace continued, else a new one."""
    digest = hashlib.blake2b(request_id.encode(), key=_SALT, digest_size=24).digest()
    span_id = int.from_bytes(digest[:8]) or 1
    parent = parse_traceparent(trace_parent.encode("latin-1") if trace_parent else None)
    if parent is None:
        return TraceIds(int.from_bytes(digest[8:]) or 1, span_id, None, 1)
    return TraceIds(parent.trace_id, span_id, parent.span_id, parent.flags)


@dataclass(frozen=True, slots=True)
class HttpFacts:
    """What the HTTP semantic conventions want of a server span, read from the ASGI scope."""

    method: str
    scheme: str
    server_address: str | None
    server_port: int | None
    protocol_version: str

    @classmethod
    def of(cls, scope: Scope) -> HttpFacts:
        server = scope.get("server") or (None, None)
        host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
        name, _, port = host.rpartition(":")
        if not port.isdigit():  # no port given (or an IPv6 address's last group)
            name, port = host, ""
        name = name.removeprefix("[").removesuffix("]")
        return cls(
            method=str(scope.get("method", "GET")),
            scheme=scope.get("scheme", "http"),
            server_address=name or server[0],
            server_port=int(port) if port else server[1],
            protocol_version=scope.get("http_version", "1.1"),
        )


def with_router_traceparent(
    record: RequestRecord, headers: list[tuple[bytes, bytes]]
) -> list[tuple[bytes, bytes]]:
    """``headers`` for the worker, with the router's ``traceparent`` (the request's root span
    as the parent, :func:`trace_ids`) in place of the client's."""
    ids = trace_ids(record.id, record.trace_parent)
    kept = [(k, v) for k, v in headers if k != b"traceparent"]
    return [*kept, (b"traceparent", ids.traceparent())]
