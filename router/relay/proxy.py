"""The one relay: a request for a model to the worker or the peer that answers it, and back.

Every request for a model takes the same steps, whatever answers it (an :class:`Upstream`: one
of this router's workers, router/relay/worker_upstream.py, or a peer, router/relay/peer_proxy.py):
the upstream is opened (a worker's model leased, loading it if needed), the request's headers
are made, the request is sent, its answer's head awaited, and the answer relayed as it comes
(router/relay/response.py). A client that leaves while the upstream is asked cancels the
request, unless it is a resumable session's (docs/protocol.md §5), which goes on for nobody.

What else happens to a request (its activity record and trace, the scheduler's notes of a
model's use and progress, the CPU cores it computes with) subscribes to the relay's events, as
httpx's ``event_hooks`` do, in router/services.py: the relay itself knows none of them.
"""

from __future__ import annotations

from functools import partial
from typing import Protocol

from litestar.response.base import ASGIResponse

from corral.http.disconnect import until_disconnected
from corral.http.errors import ApiError
from router.relay.headers import request_headers, request_target
from router.relay.relayed import Headers, Hop, Outgoing, Progress, Relayed
from router.relay.response import RelayResponse
from router.topics import Topic
from router.workers.worker_http import UpstreamError, UpstreamResponse

__all__ = ["WHOLE_BELOW", "Relay", "Upstream"]

# Answers announced shorter than this are relayed as one piece (JSON answers, not streams).
WHOLE_BELOW = 1 << 20


class Upstream(Protocol):
    """Where the relay sends a request: what differs between a worker and a peer."""

    async def open(self, relayed: Relayed) -> Hop:
        """The connection to ask, once the upstream can take the request; raises ApiError."""
        ...

    def outgoing(
        self, relayed: Relayed, headers: Headers, target: bytes
    ) -> tuple[Headers, bytes, bytes | None]:
        """The headers, target and body the upstream is sent (a peer's: its own key, the
        model's name on the peer)."""
        ...

    def failed(self, hop: Hop, error: UpstreamError) -> ApiError | None:
        """The answer to a request the upstream did not take; None: ask again (a new hop)."""
        ...

    async def answered(self, hop: Hop, answer: UpstreamResponse) -> None:
        """The answer's head arrived; raises ApiError for one not to relay."""
        ...

    def cut(self, hop: Hop, error: UpstreamError) -> ApiError:
        """What a client is told of an answer cut off midway."""
        ...


class Relay:
    """The relay of one router and its events (each a :class:`Topic`, subscribed to in
    router/services.py), in the order a request meets them:

    - ``received``: a request for a model entered the relay (not a replay of a stream);
    - ``admitted``: the upstream took it (for a worker: the request holds a lease on its model);
    - ``dispatching``: its headers are made; subscribers may add to them;
    - ``dispatched``: it is sent: the wait for the upstream is over;
    - ``progress``: an answer arrived in part (its head, then every chunk as it came: the
      tokens generated so far, the stall watchdog's news);
    - ``first_piece``: the answer's first piece is relayed (a stream's first token).

    Subscribers run at once and only note the news, as every topic's do.
    """

    def __init__(self) -> None:
        self.received: Topic[Relayed] = Topic()
        self.admitted: Topic[Hop] = Topic()
        self.dispatching: Topic[Outgoing] = Topic()
        self.dispatched: Topic[Hop] = Topic()
        self.progress: Topic[Progress] = Topic()
        self.first_piece: Topic[Relayed] = Topic()

    async def forward(self, relayed: Relayed, upstream: Upstream) -> ASGIResponse:
        """Relay a request that has just arrived."""
        self.received.publish(relayed)
        return await self.relay(relayed, upstream)

    async def relay(self, relayed: Relayed, upstream: Upstream) -> ASGIResponse:
        """Relay a request; a replay of a stream comes here directly, as it goes on with a
        request that was already received."""
        request = relayed.request
        translated = relayed.translation is not None
        while True:
            hop = await upstream.open(relayed)
            self.admitted.publish(hop)
            headers = request_headers(relayed.scope, relayed.session, translated=translated)
            target = relayed.target or request_target(relayed.scope)
            outgoing = Outgoing(hop, headers)
            self.dispatching.publish(outgoing)
            headers, target, body = upstream.outgoing(relayed, outgoing.headers, target)
            sending = hop.client.request(
                request.method, target, headers, body, whole_below=WHOLE_BELOW
            )
            self.dispatched.publish(hop)
            try:
                answer = await (
                    sending if relayed.detached else until_disconnected(request, sending)
                )
            except UpstreamError as exc:
                error = upstream.failed(hop, exc)
                if error is None:
                    continue
                raise error from None
            await upstream.answered(hop, answer)
            return self._response(hop, upstream, answer)

    def _response(self, hop: Hop, upstream: Upstream, answer: UpstreamResponse) -> RelayResponse:
        relayed = hop.relayed

        def progress(piece: bytes) -> None:
            self.progress.publish(Progress(hop, piece))

        progress(b"")  # the answer's head arrived: the worker works (the stall watchdog's news)
        return RelayResponse(
            answer,
            relayed.name,
            progress=progress,
            cut_error=partial(upstream.cut, hop),
            first_piece=partial(self.first_piece.publish, relayed),
            translation=relayed.translation,
            detached=relayed.detached,
        )
