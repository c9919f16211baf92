"""Corral's memory budget (``--models-memory-max``): how much the running models may hold.

Beyond upstream's count (``--models-max``), a model is loaded only when what the running models
hold plus what it will hold fits the budget; otherwise the scheduler evicts idle models, least
recently used first, until it does. What a model holds is, in order of trust:

- **declared**: the preset's ``memory`` key, for what the router cannot see (a context that
  will grow), and for users who prefer a fixed figure;
- **measured**: a running worker's resident memory; once a model has run, the most it was seen
  to hold is what it is expected to need the next time;
- **estimated**: before a model ever ran, the size of its files (weights and projector), its
  KV cache (from the GGUF header, laid out as the worker will lay it out) and a worker process.

This is host memory; GPU memory is the device planner's
(router/scheduling/placement/device_planner.py).
A model alone is always allowed to load, even over the budget: otherwise it never could.
Spare workers (``--models-spare``) count at their measured size, except those the coming models
will take; one more is started only when it fits (:meth:`MemoryBudget.spare_fits`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from corral.hub.sizes import files_size
from corral.options.kv_layout import kv_bytes, kv_layout, kv_shape
from router.catalogue.catalogue import CatalogueEntry
from router.catalogue.model_details import model_header
from router.workers.model_state import ModelState, Status

__all__ = [
    "SPARE_WORKER_BYTES",
    "WORKER_PROCESS_BYTES",
    "MemoryBudget",
    "kv_cache_bytes",
    "resident_memory",
]


def resident_memory(state: ModelState) -> int | None:
    """The worker's resident set size, if it runs."""
    process = state.process
    return process.resident() if process is not None else None


# A worker before any weights (Python, llama.cpp, uvicorn): measured at about 85 MB.
WORKER_PROCESS_BYTES = 96 << 20
# A spare worker, everything imported and no model, before it was measured (47 MiB measured,
# docs/benchmarks.md).
SPARE_WORKER_BYTES = 64 << 20


def kv_cache_bytes(entry: CatalogueEntry, ctx: int | None = None) -> int:
    """The KV cache a model's context takes, laid out as its worker will lay it out
    (:mod:`corral.options.kv_layout`); 0 if the header says too little.

    ``ctx``: for this many tokens instead of its ``ctx-size`` (or trained context when unset).
    """
    try:
        shape = kv_shape(model_header(entry.path))  # read once per file version
        if shape is None:
            return 0
        return kv_bytes(shape, kv_layout(entry.model_options), ctx)
    except Exception:  # a bad header (NaN, 0 heads) must not fail a schedule
        return 0


@functools.lru_cache(maxsize=256)
def _estimate(entry: CatalogueEntry) -> int:
    """What a model that never ran is expected to hold (cached: it reads its header)."""
    # A missing shard fails the load, not this: it counts for nothing.
    return files_size(entry.files()) + kv_cache_bytes(entry) + WORKER_PROCESS_BYTES


class MemoryBudget:
    def __init__(
        self,
        limit: int,
        measure: Callable[[ModelState], int | None] = resident_memory,
        spares: Callable[[], list[int]] = list,
    ) -> None:
        self.limit = limit
        self._measure = measure
        self.spares = spares  # what each spare worker holds now

    def measure(self, state: ModelState) -> int:
        """What a running model holds right now (0 when that cannot be read).

        Reading only: the scheduler remembers the peak through the worker pool, so rendering
        ``/metrics`` never changes what the next scheduling decision sees.
        """
        return self._measure(state) or 0

    def held(self, state: ModelState) -> int:
        """What a running model holds now, or will hold once loading or waking is done."""
        if state.entry.memory is not None:
            return state.entry.memory
        if state.status in (Status.LOADING, Status.SLEEPING):
            # Half-loaded, or weights freed until the next request wakes it: what it measures
            # now is not what it needs, nor a figure to remember.
            return max(self.measure(state), self.expected(state))
        return self.measure(state)

    def expected(self, state: ModelState) -> int:
        """What a model will hold once loaded."""
        if state.entry.memory is not None:
            return state.entry.memory
        return state.peak_memory or _estimate(state.entry)

    def fits(self, staying: Iterable[ModelState], coming: Iterable[ModelState]) -> bool:
        """Whether ``coming`` can load next to ``staying`` (anything fits where nothing stays)."""
        held = [self.held(state) for state in staying]
        coming = list(coming)
        # Each coming model takes a spare, whose memory is then part of what it holds.
        spares = sum(sorted(self.spares())[len(coming) :])
        return not held or sum(held) + spares + sum(map(self.expected, coming)) <= self.limit

    def spare_fits(self, staying: Iterable[ModelState], spares_held: int) -> bool:
        """Whether one more spare worker fits next to the running models and the spares."""
        held = sum(self.held(state) for state in staying)
        return held + spares_held + SPARE_WORKER_BYTES <= self.limit
