"""How long a request may take to arrive, and how many connections may be open
(docs/security.md, Connections; the figures in docs/operations.md).

uvicorn bounds neither: its keep-alive timer stops at a connection's first byte, so a client
that sends half a request head (slowloris) holds its connection, a file descriptor, for as long
as it likes, and any number of them may be open. Each connection here is in one phase:

- *head*: waiting for a complete request head, for at most ``head_seconds`` from the moment the
  connection opened or, on keep-alive, the previous answer ended (5 s once the router is three
  quarters full). A connection that has sent nothing is closed silently (as an idle keep-alive
  one is); one that has sent part of a head is answered 408 first.
- *body*: receiving a request's body; ``body_seconds`` without a byte ends it with 408. A slow
  upload that keeps moving is fine, and time the router itself is not reading (its buffer full,
  ``Expect: 100-continue`` not yet answered) is not the client's.
- *answer*: the request is in and being answered. No deadline: a stream takes as long as it takes.

Each connection is a file descriptor, and a router out of them can no longer talk to its workers
or open a file: at most ``max_connections`` are open. A new one beyond that closes the connection
that has waited longest in its head phase, idle or half-sent, since a client that has sent no
whole head has not even shown its key: otherwise anyone able to connect could hold every place
and lock keyed clients out. Only when every connection is in its body or answer phase is the
newcomer refused: answered 503 at once, without reading its request, and closed shortly after.
A non-loopback address may hold half of the places at most, so one machine's busy requests
cannot take all of them; loopback is exempt, being the user's own tools and any reverse proxy.
"""

from __future__ import annotations

import asyncio
import enum
import ipaddress
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, Final, Literal

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
# Once this share of the places is taken, a head has at most _CROWDED_HEAD_SECONDS: an idle or
# half-sent connection then holds one only briefly (uvicorn closes an idle keep-alive connection
# after 5 s anyway).
_CROWDED: Final = 0.75
_CROWDED_HEAD_SECONDS: Final = 5.0
# Refusals, and connections closed to make room, are logged at most this often, with how many.
_WARN_EVERY_SECONDS: Final = 10.0
_FULL: Final = "the router has {} connections open, its limit (--max-connections)"


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


class _Crowding:
    """Connections refused, or closed to make room, since the last warning: one line per burst,
    not one per socket."""

    counts: ClassVar[dict[str, int]] = {"refused": 0, "closed": 0}
    warned = 0.0

    @classmethod
    def note(cls, limit: int, outcome: Literal["refused", "closed"]) -> None:
        cls.counts[outcome] += 1
        now = time.monotonic()
        if now - cls.warned >= _WARN_EVERY_SECONDS:
            _log.warning("connection limit reached", limit=limit, **cls.counts)
            cls.counts, cls.warned = dict.fromkeys(cls.counts, 0), now


class GuardedHttpToolsProtocol(BoundedHttpToolsProtocol):
    """:class:`BoundedHttpToolsProtocol` with the deadlines and the cap above; one timer a
    connection, armed only while a deadline runs."""

    limits: ClassVar[ConnectionLimits] = ConnectionLimits()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._timer: asyncio.TimerHandle | None = None
        self._head_begun = False
        self._body_at = 0.0  # when the body last moved (or the router last made it wait)
        refusal = self._make_room()
        if refusal is not None:
            _Crowding.note(self.limits.max_connections, "refused")
            self._refuse(refusal)
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
            self._idle_since = self.loop.time()  # the longest waiting makes room (below)
            self._head_seconds = self.limits.head_seconds
            cap = self.limits.max_connections
            if cap and len(self.connections) >= cap * _CROWDED:
                self._head_seconds = min(self._head_seconds, _CROWDED_HEAD_SECONDS)
            self._timer = self.loop.call_later(self._head_seconds, self._expire)

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
            seconds = self._head_seconds
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

    # The cap
    def _make_room(self) -> str | None:
        """Room for this new connection, made by closing the one that has waited longest in its
        head phase if need be (among the address's own when its share is full); or why there is
        none."""
        cap = self.limits.max_connections
        if not cap:
            return None
        others = [c for c in self.connections if c is not self and not _refused(c)]
        address = _shared_address(self.client)
        if address is not None:
            share = max(1, cap // 2)
            own = [c for c in others if _host(c) == address]
            if len(own) >= share:
                if _close_longest_waiting(own, cap):
                    return None
                return f"{address} has {share} connections open, half of --max-connections"
        if len(others) >= cap and not _close_longest_waiting(others, cap):
            return _FULL.format(cap)
        return None

    def _make_way(self, cap: int) -> None:
        """Close this connection, in its head phase, for a newcomer: silently if it has sent
        nothing (as an idle keep-alive one is closed), else with the refusal a newcomer gets."""
        _Crowding.note(cap, "closed")
        if self._head_begun:
            self._refuse(_FULL.format(cap))
            return
        self._phase = _Phase.REFUSED
        self._disarm()
        self.transport.close()

    def _refuse(self, message: str) -> None:
        self._phase = _Phase.REFUSED
        self._disarm()
        self.answer(ApiError(503, message), [(b"retry-after", b"1")])
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._timer = self.loop.call_later(_LINGER_SECONDS, self._expire)


def _refused(connection: object) -> bool:
    """Refused and lingering only to be closed: no longer holding a place. (A WebSocket's
    protocol, which took its connection over, is busy.)"""
    return isinstance(connection, GuardedHttpToolsProtocol) and connection._phase is _Phase.REFUSED


def _close_longest_waiting(connections: Iterable[object], cap: int) -> bool:
    """Close the connection that has waited longest for a head, if any is waiting."""
    waiting = [
        c
        for c in connections
        if isinstance(c, GuardedHttpToolsProtocol) and c._phase is _Phase.HEAD
    ]
    if not waiting:
        return False
    min(waiting, key=lambda c: c._idle_since)._make_way(cap)
    return True


def _host(connection: object) -> str | None:
    client = getattr(connection, "client", None)  # not on every protocol uvicorn may run
    return client[0] if client else None


def _shared_address(client: tuple[str, int] | None) -> str | None:
    """The address whose connections may hold only a share of the places; None on loopback (the
    user's own tools, a reverse proxy on the host) and for a Unix socket's clients."""
    if client is None:
        return None
    try:
        ip = ipaddress.ip_address(client[0])
    except ValueError:
        return client[0]
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 on a dual-stack socket
    return None if ip.is_loopback else client[0]


def _address(client: tuple[str, int] | None) -> str:
    return f"{client[0]}:{client[1]}" if client else "unknown"


def guarded_protocol(limits: ConnectionLimits) -> type[GuardedHttpToolsProtocol]:
    """The protocol class uvicorn builds each connection from, with these limits."""
    return type("GuardedHttpToolsProtocol", (GuardedHttpToolsProtocol,), {"limits": limits})
