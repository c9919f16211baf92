"""Why a model cannot serve a request: the scheduler's answers, free of HTTP (docs/protocol.md §4).

The HTTP layer (:mod:`router.api.scheduling_answers`) turns each into its status and message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from router.workers.model_state import ModelState

__all__ = [
    "AlreadyRunning",
    "BadModelFile",
    "LoadFailed",
    "LoadInterrupted",
    "LoadStalled",
    "LoadsHeld",
    "ModelNotFound",
    "NoRoom",
    "OutOfDeviceMemory",
    "QueueFull",
    "SchedulingError",
    "load_error",
]


class SchedulingError(Exception):
    """A model named ``model`` cannot be had as asked."""

    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.model = model


class ModelNotFound(SchedulingError):
    """No model and no alias has this name (or a reload removed it)."""

    def __init__(
        self, model: str, suggestions: tuple[str, ...] = (), known: tuple[str, ...] = ()
    ) -> None:
        super().__init__(model)
        self.suggestions = suggestions  # the closest existing names, best first
        self.known = known  # every model there is, named when none is close (issue 54)


class AlreadyRunning(SchedulingError):
    """An explicit load of a model that runs, or is loading, already."""


class NoRoom(SchedulingError):
    """Every model that would have to make room is busy or pinned."""


class LoadFailed(SchedulingError):
    """The worker died while loading; ``reason`` says how."""

    def __init__(self, model: str, reason: str | None) -> None:
        super().__init__(model)
        self.reason = reason


class BadModelFile(LoadFailed):
    """No worker was started: one of the model's files is unusable; ``reason`` says what is
    wrong (a truncated download, a malformed header)."""


class LoadInterrupted(SchedulingError):
    """The load was stopped (evicted, unloaded, reloaded) before it finished."""


class LoadsHeld(SchedulingError):
    """The model's files are being removed from the hub cache (router.availability.load_holds)."""


class LoadStalled(LoadFailed):
    """The load showed no progress for the load timeout, so the router killed it."""


class OutOfDeviceMemory(LoadFailed):
    """The load ran out of memory on ``device`` twice, the second time with the idle models
    there evicted: it needs ``needed`` bytes, ``free`` were free."""

    def __init__(self, model: str, device: str, needed: int, free: int) -> None:
        super().__init__(model, f"out of memory on {device}")
        self.device, self.needed, self.free = device, needed, free


class QueueFull(SchedulingError):
    """No place in the queue (``--max-queue``): the request is refused, not queued.
    ``for_slot``: it would have waited for one of its running model's slots, not for a load.
    ``held``: the places its caller still holds, when it is refused for its caller's share
    (all the places one caller may have, or the most of a full queue: its newest is refused
    for another caller's) rather than for a queue full of others' requests."""

    def __init__(self, model: str, *, for_slot: bool = False, held: int | None = None) -> None:
        super().__init__(model)
        self.for_slot, self.held = for_slot, held


def load_error(state: ModelState) -> LoadFailed | LoadInterrupted:
    """What the requests that waited for a model's load are told when it did not come up."""
    if state.failed and state.bad_file:
        return BadModelFile(state.name, state.error)
    oom = state.out_of_memory
    if state.failed and oom is not None:
        return OutOfDeviceMemory(state.name, oom.device, oom.needed, oom.free)
    if state.failed and state.fault is not None:
        return LoadStalled(state.name, state.fault_message)
    if state.failed:
        return LoadFailed(state.name, state.error)
    return LoadInterrupted(state.name)
