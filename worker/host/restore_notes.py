"""The router's id of each request it relays (``x-corral-request-id``), so that the worker can
tell it, on its stdout state lines, when it begins and ends loading a saved KV cache for that
request: the router's activity view shows the request "restoring" meanwhile (docs/protocol.md
§1). Nothing is sent for a request without the header (a client of the worker's own) or without
a restore, and nothing is ever added to an answer: its client sees the same bytes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar

import msgspec
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send

from corral.children.protocol import REQUEST_ID_HEADER, RESTORE_STATE, RestoreNote, StateWriter
from corral.http.scope_headers import scope_header

__all__ = ["RestoreNotify", "restore_notify", "with_restore_notes"]

# (done, tokens) → the note sent for the request being answered: its restore begins (False, 0)
# or has ended (True, the prompt tokens it gave back). Called on the engine thread.
RestoreNotify = Callable[[bool, int], None]

_current: ContextVar[RestoreNotify | None] = ContextVar("corral_restore_notify", default=None)


def restore_notify() -> RestoreNotify | None:
    """How to note a restore for the request being answered; None when the router did not
    name it. Read as its generation is made, on the request's task."""
    return _current.get()


def with_restore_notes(app: ASGIApp, states: StateWriter) -> ASGIApp:
    """``app`` with each router request's restore notes going to ``states``."""

    async def call(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP:
            header = scope_header(scope, REQUEST_ID_HEADER)
            if header is not None:
                request = header.decode("latin-1")

                def notify(done: bool, tokens: int) -> None:
                    note = RestoreNote(request, done, tokens, time.time())
                    states.send(RESTORE_STATE, msgspec.structs.asdict(note))

                token = _current.set(notify)
                try:
                    await app(scope, receive, send)
                finally:
                    _current.reset(token)
                return
        await app(scope, receive, send)

    return call
