"""What the request records and traces note of a request on its way through the relay.

The relay (router/relay/proxy.py) publishes its events and knows nothing of records;
router/services.py subscribes these to them. Each reads the record of the request being
handled (:func:`~router.observe.requests.current_record`), so they take only plain values.
"""

from __future__ import annotations

from litestar.types import Scope

from corral.children.protocol import REQUEST_ID_HEADER
from router.observe.access_log import note_model
from router.observe.requests import begin_request, client_traceparent, current_record, traced_record
from router.observe.tracing.context import with_router_traceparent

__all__ = ["answer_began", "generated", "received", "request_headers", "sent"]

Headers = list[tuple[bytes, bytes]]

# An event of a stream (docs/protocol.md §3): one per token in every API a worker speaks, plus
# a few around them (the role, the end, the usage), which the answer's own counts replace.
_EVENT = b"data: {"


def received(model: str, key_id: str | None, klass: str, scope: Scope) -> None:
    """A request for ``model`` arrived: its record joins the history, queued."""
    begin_request(model, key_id, scope["path"], client_traceparent(scope), klass)


def request_headers(model: str, headers: Headers) -> Headers:
    """The headers a request leaves with: the record's id, which a worker's notes of a KV
    restore name (docs/protocol.md §1), and the router's traceparent when it is traced."""
    record = note_model(model)  # the canonical name, whatever the request called it
    if record is not None:
        headers.append((REQUEST_ID_HEADER, record.id.encode()))
    if (traced := traced_record()) is not None:
        headers = with_router_traceparent(traced, headers)
    return headers


def sent() -> None:
    """The request was handed to its worker (or peer): its queue wait ends."""
    if (record := current_record()) is not None:
        record.dispatched_now()


def answer_began() -> None:
    """The answer's first piece (a stream's first token) is relayed."""
    if (record := current_record()) is not None:
        record.chunk()


def generated(piece: bytes) -> None:
    """A piece of the answer came from the upstream: its tokens count as generated now (the
    live figures of docs/operations.md, "Activity"). A C-speed count per chunk, no parsing."""
    if piece and (record := current_record()) is not None:
        record.generated(piece.count(_EVENT))
