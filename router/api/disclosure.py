"""What an ``inference`` key is not told: where the server keeps its files and how it runs its
workers (docs/security.md, "Key holders (scopes)").

Admin keys, and every caller of a router without keys, see the answers as they are. For an
inference key the listings leave out each worker's command line (``status.args``) and its
effective preset (``status.preset``), which name paths and flags; and wherever an answer names
a file (``/props``' ``model_path``, a LoRA adapter's ``path``, ``/api/show``'s Modelfile, an
error message) only the file's own name is left. A model's name, size, context and
capabilities are what a client needs, and they stay. A failed load's error, in the worker's own
words, names the model's file by its name only too: every exception the router answers goes
through :func:`error_for_caller`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import msgspec
from litestar import Request, Response
from litestar.types import ExceptionHandlersMap, Scope
from msgspec import UNSET, UnsetType

from corral.http.errors import ApiError, ErrorEnvelope, error_response, triage
from router.catalogue.listing import ModelListing
from router.observe.events import ModelEvent
from router.scheduling.answers import LoadError
from router.security.callers import is_admin

__all__ = [
    "JsonRewrite",
    "adapters_for_inference",
    "error_for_caller",
    "event_for_inference",
    "exception_handlers",
    "hide_paths",
    "listing_for_inference",
    "props_for_inference",
    "slots_for_inference",
]

# An absolute path's folders: a "/" that starts a word (not one inside a URL, "a/b" or "//"),
# then folder names each ending in "/". What follows the last "/" is the file's name and stays.
_FOLDERS: Final = re.compile(r"(?<![\w.:/~-])(?:~|[A-Za-z]:)?/(?:[^\s/'\"`]+/)+")


def hide_paths(text: str) -> str:
    """``text`` with every absolute path cut to its last part."""
    return _FOLDERS.sub("", text)


def _file_name(value: Any) -> Any:
    return hide_paths(value) if isinstance(value, str) else value


def error_for_caller(scope: Scope, error: ApiError) -> ApiError:
    """``error`` as the request's caller may read it: a failed load's without paths for one who
    is no admin. (The router's own messages name no file, but may name routes: ``/v1/stream``.)"""
    if is_admin(scope) or not isinstance(error, LoadError):
        return error
    message = hide_paths(error.message)
    if message == error.message:
        return error
    return ApiError(error.status, message, error.type, headers=error.headers)


def _error_answer(request: Request[Any, Any, Any], exc: Exception) -> Response[ErrorEnvelope]:
    return error_response(error_for_caller(request.scope, triage(request, exc)))


# The router's answer to any exception: corral.http.errors' own, told as the caller may read it.
exception_handlers: ExceptionHandlersMap = {Exception: _error_answer}


def listing_for_inference(entry: ModelListing) -> ModelListing:
    """A ``GET /models`` entry without the worker's argv and preset, errors without paths, and
    a queue that does not say which other keys are waiting (their ids tell key holders apart,
    as the activity view does not for an inference key)."""
    status = msgspec.structs.replace(entry.status, args=UNSET, preset=UNSET)
    if isinstance(status.error, str):
        status.error = hide_paths(status.error)
    queue = entry.queue
    if not isinstance(queue, UnsetType):
        queue = msgspec.structs.replace(queue, keys={})
    return msgspec.structs.replace(entry, status=status, queue=queue)


def event_for_inference(event: ModelEvent) -> ModelEvent:
    """A ``/models/sse`` event with its error (a failed load's, a download's) without paths."""
    data = event.data
    if data is None or not isinstance(data.get("error"), str):
        return event
    return msgspec.structs.replace(event, data={**data, "error": hide_paths(data["error"])})


def props_for_inference(props: Any) -> Any:
    """A worker's ``/props`` with the model's file name for its path (llama.cpp's Web UI shows
    the name it reads there)."""
    if isinstance(props, dict) and "model_path" in props:
        return {**props, "model_path": _file_name(props["model_path"])}
    return props


def slots_for_inference(slots: Any) -> Any:
    """A worker's ``GET /slots`` without each slot's ``params``: the last request's settings
    (its seed, stop words, grammar) are its caller's, who may hold another key."""
    if not isinstance(slots, list):
        return slots
    return [
        {k: v for k, v in item.items() if k != "params"} if isinstance(item, dict) else item
        for item in slots
    ]


def adapters_for_inference(adapters: Any) -> Any:
    """A worker's ``GET /lora-adapters`` with each adapter's file name for its path."""
    if not isinstance(adapters, list):
        return adapters
    return [
        {**item, "path": _file_name(item.get("path"))} if isinstance(item, dict) else item
        for item in adapters
    ]


class JsonRewrite:
    """A worker's JSON answer passed through ``rewrite`` (an answer translation,
    router/relay/translation.py); an error or anything not JSON goes through as it is."""

    media_type = "application/json"

    def __init__(self, rewrite: Callable[[Any], Any]) -> None:
        self._rewrite = rewrite

    def whole(self, status: int, body: bytes) -> tuple[int, bytes]:
        if status >= 400:
            return status, body
        try:
            document = msgspec.json.decode(body)
        except msgspec.DecodeError:
            return status, body
        return status, msgspec.json.encode(self._rewrite(document))

    async def stream(self, events: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        async for chunk in events:  # none of the rewritten routes streams
            yield chunk

    def error(self, error: ApiError) -> bytes:
        return msgspec.json.encode(error.envelope())
