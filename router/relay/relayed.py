"""One request on its way through the relay, and its tries at an upstream.

A :class:`Relayed` is built once, where a request for a model enters the router (the API's
handlers: router/api/inference.py, router/api/streams.py) and carried down to the relay
(router/relay/proxy.py) instead of threading its parts through every call. What the relay
learns on the way (the worker or peer that answers, the model it holds a lease on) is a
:class:`Hop`; the relay's events (``Relay``'s topics) carry these two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from litestar import Request
from litestar.types import Scope

from router.relay.conversations import Claim
from router.relay.translation import AnswerTranslation
from router.scheduling.waiting_line import Caller
from router.workers.model_state import ModelState
from router.workers.worker_http import WorkerClient

__all__ = ["Hop", "Outgoing", "Progress", "Relayed"]

Headers = list[tuple[bytes, bytes]]


@dataclass(frozen=True, slots=True)
class Relayed:
    """A request for the model ``name``, as the relay carries it.

    ``caller``: its key and class, for the scheduler's order and the activity record.
    ``counted``: a generation, which takes one of the model's slots and counts against its
    key's ``concurrency`` (docs/serving.md, "Scheduling"); GETs do not. ``autoload``: whether
    the model may be loaded for it (``--models-autoload``, ``?autoload=``). ``session``: a
    resumable-session POST, which goes on without its client (docs/protocol.md §5).
    ``target`` sends it to another path than the request's, and ``translation`` turns the
    answer into the client's API (router/relay/translation.py).
    """

    request: Request[Any, Any, Any]
    name: str
    body: bytes | None
    caller: Caller
    counted: bool = False
    autoload: bool = True
    session: Claim | None = None
    target: bytes | None = None
    translation: AnswerTranslation | None = None

    @property
    def scope(self) -> Scope:
        return self.request.scope

    @property
    def detached(self) -> bool:
        """A session's request is relayed to its end even once its client has gone."""
        return self.session is not None


@dataclass(frozen=True, slots=True)
class Hop:
    """One try of a request at its upstream: the connection that asks it, and the model's state
    when the upstream is one of this router's workers (None for a peer)."""

    relayed: Relayed
    client: WorkerClient
    model: ModelState | None = None


@dataclass(slots=True)
class Outgoing:
    """The request's headers as they are about to leave; ``dispatching``'s subscribers may add
    to them (the router's request id and traceparent, docs/protocol.md §1)."""

    hop: Hop
    headers: Headers


@dataclass(frozen=True, slots=True)
class Progress:
    """Part of an answer arrived from the upstream: ``piece`` is the bytes as they came (empty
    for the answer's head), whose tokens the request's record counts as they are generated."""

    hop: Hop
    piece: bytes = b""
