"""The CPU cores shared among the models generating at once (docs/serving.md, "CPU threads").

A worker computes with as many threads as the box has cores (llama-server's default,
:func:`corral.cpu_threads.default_threads`). ggml's threads work in lock-step: each step waits
for the slowest, so two workers each running that many threads on the same cores make every
step wait for a thread the other worker has put off its core. Pinning every model to fewer
threads would waste the box whenever one model is busy alone. So the router gives each busy
worker its share from one generation to the next, over the child protocol's threads command
(docs/protocol.md §1), which the worker applies before its next decode:

- A model is *busy* while a generation (a counted POST) it was handed is in flight. Loading
  does not count (a load is mostly reading files, and its first request makes it busy), nor do
  GETs (``/metrics``, ``/props``), which compute nothing.
- The busy models share the cores: ``cores // busy`` threads each, at least 1, the remainder one
  each to those busy longest. A model going idle keeps its count (it computes nothing) and its
  cores go to those still busy, whose count grows.
- A model whose ``threads``, ``threads-batch``, ``cpu-mask`` or ``cpu-range`` is set (flag,
  ``LLAMA_ARG_THREADS``, preset) is the user's to place: never sent a command, never counted.
- A command goes out only when a worker's share changes; a worker starts with all the cores.
  One model alone always has all of them, as before this module.

On the request path this costs a counter change, and a share computed over the busy models
only when a model becomes busy or idle.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

import structlog
from anyio.abc import TaskGroup

from router.catalogue.catalogue import CatalogueEntry
from router.scheduling.leases import Lease, RequestScope, bind
from router.workers.model_state import ModelState

__all__ = ["CoreShare", "send_in", "shares"]

_log = structlog.get_logger("corral.scheduler")

# The options that place a model's threads by hand.
_PLACED = frozenset({"threads", "threads-batch", "cpu-mask", "cpu-range"})
K = TypeVar("K", bound=Hashable)


def shares(busy: Sequence[K], cores: int) -> dict[K, int]:
    """Each busy model's threads, ``busy`` ordered from the one busy longest."""
    each, left = divmod(cores, len(busy)) if busy else (0, 0)
    return {model: max(1, each + (i < left)) for i, model in enumerate(busy)}


class CoreShare:
    """``send(state, threads)`` tells a worker its new count (it must not block)."""

    def __init__(self, cores: int, send: Callable[[ModelState, int], None]) -> None:
        self.cores = max(1, cores)
        self._send = send
        # Generations in flight per busy model; a dict keeps the order they became busy in.
        self._busy: dict[ModelState, int] = {}
        # What each worker was last told, with the load it was told in (a new worker process
        # starts with all the cores again).
        self._told: weakref.WeakKeyDictionary[ModelState, tuple[int, int]] = (
            weakref.WeakKeyDictionary()
        )
        # Whether each model's threads are the router's to set, for the entry it was read from
        # (a reload may give a model new options): read once, not on every request.
        self._shared: weakref.WeakKeyDictionary[ModelState, tuple[CatalogueEntry, bool]] = (
            weakref.WeakKeyDictionary()
        )

    def threads(self, state: ModelState) -> int | None:
        """The threads the model's worker was given; None when it places its own."""
        if not self._automatic(state):
            return None
        loads, threads = self._told.get(state, (-1, self.cores))
        return threads if loads == state.loads else self.cores

    def busy(self, state: ModelState, request: RequestScope) -> None:
        """A generation was handed to the model; it ends with ``request``."""
        running = self._busy.get(state, 0)
        if running == 0 and not self._automatic(state):
            return
        self._busy[state] = running + 1
        bind(request, Lease(state, self._ended))
        if running == 0:
            self._share()

    def _ended(self, state: ModelState) -> None:
        running = self._busy[state]
        if running > 1:
            self._busy[state] = running - 1  # keeps its place: busy since it was first
        else:
            del self._busy[state]
            self._share()

    def _automatic(self, state: ModelState) -> bool:
        entry = state.entry
        known = self._shared.get(state)
        if known is None or known[0] is not entry:
            known = (entry, _PLACED.isdisjoint(name for name, _ in entry.options))
            self._shared[state] = known
        return known[1]

    def _share(self) -> None:
        for state, threads in shares(list(self._busy), self.cores).items():
            if self.threads(state) != threads:
                self._told[state] = (state.loads, threads)
                self._send(state, threads)


def send_in(tasks: TaskGroup) -> Callable[[ModelState, int], None]:
    """A ``send`` for :class:`CoreShare`: the command goes down the worker's stdin in a task of
    ``tasks`` (a pipe write; tasks start in order, so a worker reads its commands in order)."""

    def send(state: ModelState, threads: int) -> None:
        process = state.process
        if process is not None:
            _log.debug("sharing the cores", model=state.name, threads=threads)
            tasks.start_soon(process.send_threads, threads, threads)

    return send
