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
# How many existing models an unknown name's 404 lists before it points at the listing.
_KNOWN_NAMED = 8


class LoadError(ApiError):
    """A failed load, in its worker's (llama.cpp's) own words, which may name the model's file
    by its path: router/api/disclosure.py cuts it to the file's name for a caller not admin."""


def api_error(error: SchedulingError) -> ApiError:
    name = error.model
    if isinstance(error, ModelNotFound):
        return ApiError(404, f"model '{name}' not found" + _not_found_hint(error))
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


def _not_found_hint(error: ModelNotFound) -> str:
    """The closest names; else what there is and how to get a hub model, so that a newcomer
    who copied a hub name from the docs learns both what to ask for and how to fetch it."""
    if error.suggestions:
        return "; did you mean " + " or ".join(f"'{other}'" for other in error.suggestions) + "?"
    named = ", ".join(f"'{known}'" for known in error.known[:_KNOWN_NAMED])
    if len(error.known) > _KNOWN_NAMED:
        named += f" and {len(error.known) - _KNOWN_NAMED} more (GET /v1/models)"
    here = f"; models here: {named}" if named else "; no models are served"
    hub = error.model if "/" in error.model else "owner/repo[:quant]"
    return f"{here}; a hub model is fetched with `corral pull {hub}` (or POST /models)"


@contextmanager
def scheduling_answered() -> Iterator[None]:
    """Re-raise a scheduling refusal from the block as the HTTP answer it calls for."""
    try:
        yield
    except SchedulingError as error:
        raise api_error(error) from None
