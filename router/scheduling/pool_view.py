"""What the scheduler's collaborators read of the worker pool: its models, nothing more.

:class:`~router.scheduling.scheduler.Scheduler` is the one loop that acts: it alone asks the
:class:`~router.workers.pool.WorkerPool` to start, stop or count a model. The collaborators it
holds as fields (:class:`~router.scheduling.room.Room`, :class:`~router.scheduling.timers.Timers`,
:class:`~router.scheduling.eviction.Eviction`) answer its questions from what they see through
this view, so none of them can change a model. The pool is one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from router.workers.model_state import ModelState

__all__ = ["PoolView"]


class PoolView(Protocol):
    @property
    def models(self) -> Mapping[str, ModelState]:
        """Every model of the catalogue by name, as it stands now (a reload replaces it)."""
        ...

    @property
    def workers(self) -> list[ModelState]:
        """Every model's every copy (``replicas``): what runs and counts toward the limits."""
        ...
