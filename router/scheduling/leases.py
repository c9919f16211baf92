"""A request's claim on a model, given back when the request ends (docs/protocol.md §4).

A model with a request in flight is never evicted, so every claim must be given back exactly
once, whatever ends the request: the last byte of its answer, an error before the worker was
asked, the client leaving while the model loads, a cancellation between the claim and the
moment its handler sees it. Handlers never give claims back themselves (a missed path would
leak one and keep a model loaded for ever). The scheduler binds each :class:`Lease` to the
request it was taken for, and :func:`release_leases`, the outermost of the app's middleware,
gives back every lease of a request when the request's ASGI call returns, as Ollama's
``runnerRef`` is released when its request is done. Other counts of a request's life bind a
:class:`Held` of their own the same way (a caller's resumable sessions in flight,
router/security/rate_limits.py).
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any, Protocol, TypeAlias, TypeVar, cast

from litestar.types import ASGIApp, Receive, Scope, Send

from router.workers.model_state import ModelState

__all__ = ["Held", "Lease", "RequestScope", "bind", "release_all", "release_leases"]

# The ASGI scope of the request a lease belongs to; tests pass a plain dict.
RequestScope: TypeAlias = Scope | MutableMapping[str, Any]
_LEASES = "corral.leases"  # the scope's key: ASGI lets servers and apps add their own


class Held(Protocol):
    """Something a request holds until it ends; ``release`` must be idempotent."""

    def release(self) -> None: ...


_H = TypeVar("_H", bound=Held)


class Lease:
    """One request counted busy on one model; :meth:`release` is idempotent."""

    __slots__ = ("_give_back", "_released", "_state")

    def __init__(self, state: ModelState, give_back: Callable[[ModelState], None]) -> None:
        self._state = state
        self._give_back = give_back
        self._released = False

    def __repr__(self) -> str:
        return f"Lease({self._state.name!r}, released={self._released})"

    @property
    def state(self) -> ModelState:
        return self._state

    @property
    def released(self) -> bool:
        return self._released

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._give_back(self._state)


def bind(request: RequestScope, lease: _H) -> _H:
    """Tie ``lease`` to ``request``: it is released when the request ends."""
    cast("MutableMapping[str, Any]", request).setdefault(_LEASES, []).append(lease)
    return lease


def release_all(request: RequestScope) -> None:
    """The request ended: give back every lease taken for it."""
    leases: list[Held] = cast("MutableMapping[str, Any]", request).pop(_LEASES, [])
    for lease in leases:
        lease.release()


def release_leases(app: ASGIApp) -> ASGIApp:
    """Litestar middleware: the route handler's whole ASGI call, the answer's relay included,
    runs inside it, so what the call took is given back when it returns or raises."""

    async def call(scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await app(scope, receive, send)
        finally:
            release_all(scope)

    return call
