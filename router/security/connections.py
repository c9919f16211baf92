"""How long a request may take to arrive, and how many connections may be open
(docs/security.md, Connections; the figures in docs/operations.md).

uvicorn bounds neither: its keep-alive timer stops at a connection's first byte, so a client
that sends half a request head (slowloris) holds its connection, a file descriptor, for as long
as it likes, and any number of them may be open. Each connection here is in one phase:

- *head*: waiting for a complete request head, for at most ``head_seconds`` from the moment the
  connection opened or, on keep-alive, the previous answer ended. A connection that has sent
  nothing is closed silently (as an idle keep-alive one is); one that has sent part of a head is
  answered 408 first.
- *body*: receiving a request's body; ``body_seconds`` without a byte ends it with 408. A slow
  upload that keeps moving is fine, and time the router itself is not reading (its buffer full,
  ``Expect: 100-continue`` not yet answered) is not the client's.
- *answer*: the request is in and being answered. No deadline: a stream takes as long as it takes.

Beyond ``max_connections`` open connections, a new one is answered 503 at once, without reading
its request, and closed shortly after: each connection is a file descriptor, and a router out of
them can no longer talk to its workers or open a file.
"""

from __future__ import annotations

import asyncio
import enum
import os
import time
from dataclasses import dataclass
from typing import ClassVar, Final

import structlog

from corral.http.errors import ApiError
from router.security.request_limits import BoundedHttpToolsProtocol

__all__ = [
    "BODY_SECONDS",
    "DEADLINE_ENV",
    "HEAD_SECONDS",
    "ConnectionLimits",
    "guarded_protocol",
]

_log = structlog.get_logger("corral.connections")

# As common front ends (nginx's client_header_timeout and client_body_timeout are 60 s, Apache's
# mod_reqtimeout 20-40 s for a head): no client on a working link is anywhere near.
HEAD_SECONDS: Final = 30.0
BODY_SECONDS: Final = 60.0
# Tests shorten both deadlines rather than wait for them: seconds, not a setting.
DEADLINE_ENV: Final = "CORRAL_DEBUG_RECEIVE_SECONDS"
# A refused connection is read (and the bytes dropped) this long after its 503, so that the
# client gets the answer rather than a reset from closing over its unread request.
_LINGER_SECONDS: Final = 2.0
# Refusals are logged at most this often, with how many there were.
_WARN_EVERY_SECONDS: Final = 10.0


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    max_connections: int = 0  # open at once; 0: no limit
    head_seconds: float = HEAD_SECONDS
    body_seconds: float = BODY_SECONDS

    @classmethod
    def from_environment(cls, max_connections: int) -> ConnectionLimits:
        shortened = os.environ.get(DEADLINE_ENV)
        if not shortened:
            return cls(max_connections)
        return cls(max_connections, float(shortened), float(shortened))


class _Phase(enum.Enum):
    HEAD = "head"
    BODY = "body"
    ANSWER = "answer"
    REFUSED = "refused"


class _Refusals:
    """Connections refused since the last warning: one line per burst, not one per socket."""

    count = 0
    warned = 0.0

    @classmethod
    def note(cls, limit: int) -> None:
        cls.count += 1
        now = time.monotonic()
        if now - cls.warned >= _WARN_EVERY_SECONDS:
            _log.warning("connections refused", limit=limit, refused=cls.count)
            cls.count, cls.warned = 0, now


class GuardedHttpToolsProtocol(BoundedHttpToolsProtocol):
    """:class:`BoundedHttpToolsProtocol` with the deadlines and the cap above; one timer a
    connection, armed only while a deadline runs."""

    limits: ClassVar[ConnectionLimits] = ConnectionLimits()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._timer: asyncio.TimerHandle | None = None
        self._head_begun = False
        self._body_at = 0.0  # when the body last moved (or the router last made it wait)
        cap = self.limits.max_connections
        if cap and len(self.connections) > cap:
            self._refuse(cap)
            return
        self._enter(_Phase.HEAD)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._phase is _Phase.REFUSED:
            return  # read only so that closing does not reset the connection
        super().data_received(data)
        if self._phase is _Phase.BODY and self._timer is None and not self.transport.is_closing():
            # Armed here rather than at the head's end: most requests end in the same chunk.
            self._body_at = self.loop.time()
            self._timer = self.loop.call_later(self.limits.body_seconds, self._expire)

    def handle_websocket_upgrade(self) -> None:
        self._enter(_Phase.ANSWER)  # a WebSocket's own protocol takes the connection over
        super().handle_websocket_upgrade()

    # Parser and uvicorn callbacks
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_begun = True

    def on_headers_complete(self) -> None:
        self._head_begun = False
        self._enter(_Phase.BODY)
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        self._body_at = self.loop.time()
        super().on_body(body)

    def on_message_complete(self) -> None:
        # Not when answered before its body was in (a 413): the next head's deadline runs.
        if self._phase is _Phase.BODY:
            self._enter(_Phase.ANSWER)
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # Keep-alive: the next head's deadline runs from here, unless a request already sent
        # (pipelined) is still to be answered. What is left of a body nobody reads (after a
        # 413) has that long to end, too.
        idle = self.cycle is None or self.cycle.response_complete
        if self._phase is not _Phase.REFUSED and idle and not self.transport.is_closing():
            self._enter(_Phase.HEAD)

    # Deadlines
    def _enter(self, phase: _Phase) -> None:
        self._phase = phase
        self._disarm()
        if phase is _Phase.HEAD:
            self._timer = self.loop.call_later(self.limits.head_seconds, self._expire)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        if self._phase is _Phase.REFUSED:
            self.transport.close()
        elif self._phase is _Phase.HEAD:
            if not self._head_begun:  # nothing sent: an idle connection, closed as such
                self.transport.close()
                return
            seconds = self.limits.head_seconds
            self._time_out(f"the request's head did not arrive within {seconds:g} s")
        elif self._phase is _Phase.BODY:
            now = self.loop.time()
            if self.flow.read_paused or (self.cycle and self.cycle.waiting_for_100_continue):
                self._body_at = now  # the router is not reading: the client is not late
            left = self._body_at + self.limits.body_seconds - now
            if left > 0:
                self._timer = self.loop.call_later(left, self._expire)
                return
            seconds = self.limits.body_seconds
            self._time_out(f"the request's body stopped arriving for {seconds:g} s")

    def _time_out(self, message: str) -> None:
        _log.info("request timed out", client=_address(self.client), reason=message)
        self.answer_and_close(ApiError(408, message))

    def _refuse(self, cap: int) -> None:
        self._phase = _Phase.REFUSED
        _Refusals.note(cap)
        message = f"the router has {cap} connections open, its limit (--max-connections)"
        self.answer(ApiError(503, message), [(b"retry-after", b"1")])
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._timer = self.loop.call_later(_LINGER_SECONDS, self._expire)


def _address(client: tuple[str, int] | None) -> str:
    return f"{client[0]}:{client[1]}" if client else "unknown"


def guarded_protocol(limits: ConnectionLimits) -> type[GuardedHttpToolsProtocol]:
    """The protocol class uvicorn builds each connection from, with these limits."""
    return type("GuardedHttpToolsProtocol", (GuardedHttpToolsProtocol,), {"limits": limits})
