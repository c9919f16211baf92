"""How the HTTP layer answers a scheduling refusal: status codes and messages (docs/protocol.md §3).

The scheduler and the worker pool raise :mod:`router.availability.errors`; the routes and the proxy
turn them into :class:`~corral.http.errors.ApiError` here, so the answers clients see live in one
place.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from corral.http.errors import ApiError
from router.availability.errors import (
    AlreadyRunning,
    BadModelFile,
    LoadFailed,
    LoadInterrupted,
    LoadsHeld,
    LoadStalled,
    ModelNotFound,
    NoRoom,
    OutOfDeviceMemory,
    QueueFull,
    SchedulingError,
)

__all__ = ["QUEUE_RETRY_AFTER_SECONDS", "LoadError", "api_error", "scheduling_answered"]

# What a client refused by a full queue is told to wait: loads take seconds, the queue drains
# as they finish.
QUEUE_RETRY_AFTER_SECONDS = 1


class LoadError(ApiError):
    """A failed load, in its worker's (llama.cpp's) own words, which may name the model's file
    by its path: router/api/disclosure.py cuts it to the file's name for a caller not admin."""


def api_error(error: SchedulingError) -> ApiError:
    name = error.model
    if isinstance(error, ModelNotFound):
        hint = " or ".join(f"'{other}'" for other in error.suggestions)
        return ApiError(
            404, f"model '{name}' not found" + (f"; did you mean {hint}?" if hint else "")
        )
    if isinstance(error, AlreadyRunning):
        return ApiError(400, "model is already running")
    if isinstance(error, NoRoom):
        return ApiError(500, "model limit reached, try again later")
    if isinstance(error, QueueFull):
        waiting = "for a slot" if error.for_slot else "for models to load"
        share = "" if error.held is None else f"; this caller already holds {error.held} of them"
        return ApiError(
            503,
            f"too many requests are waiting {waiting}{share}, try again later",
            headers={"Retry-After": str(QUEUE_RETRY_AFTER_SECONDS)},
        )
    if isinstance(error, OutOfDeviceMemory):  # memory may come free: a capacity answer
        return ApiError(
            503,
            f"model '{name}' does not fit on {error.device}: it needs {error.needed >> 20} MiB, "
            f"{error.free >> 20} MiB are free",
            "unavailable_error",
        )
    if isinstance(error, BadModelFile):  # nothing to retry until the file is replaced
        return LoadError(
            422, f"model '{name}' failed to load: {error.reason}", "invalid_request_error"
        )
    if isinstance(error, LoadStalled):  # a timeout, not a broken model: worth another try
        return ApiError(503, f"model '{name}' {error.reason}")
    if isinstance(error, LoadFailed):
        return LoadError(500, f"model '{name}' failed to load: {error.reason}")
    if isinstance(error, LoadsHeld):
        return ApiError(503, f"model '{name}' cannot load now: its files are being removed")
    if isinstance(error, LoadInterrupted):
        return ApiError(503, f"model '{name}' was stopped before it finished loading")
    return ApiError(500, f"model '{name}': {error}")


@contextmanager
def scheduling_answered() -> Iterator[None]:
    """Re-raise a scheduling refusal from the block as the HTTP answer it calls for."""
    try:
        yield
    except SchedulingError as error:
        raise api_error(error) from None
