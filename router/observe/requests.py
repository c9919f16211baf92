"""One record per proxied request, shared by the access log and the activity view (issue 39).

The access-log wrapper (router/observe/access_log.py) makes a :class:`RequestRecord` for every
HTTP request and keeps it in a context variable; the relay fills in what it learns at the few
points where it learns it (:func:`begin_request` when the request is for a model, then
:meth:`RequestRecord.dispatched_now` and :meth:`RequestRecord.chunk`), and the wrapper closes
it with the answer's status and token counts. Only requests for a model enter the
:class:`RequestHistory`: every one in flight, and the last :data:`FINISHED_KEPT` finished,
bounded in memory. The field names are the ones the OpenTelemetry spans read (docs/operations.md,
"Activity"). Times are wall-clock seconds (``time.time()``), None when the phase did not happen.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Iterable, Iterator
from contextvars import ContextVar, Token
from typing import Any

import msgspec
from litestar.types import Scope

from corral.children.protocol import parse_restore
from corral.http.scope_headers import scope_header
from router.topics import Topic

__all__ = [
    "FINISHED_KEPT",
    "RequestHistory",
    "RequestRecord",
    "begin_request",
    "client_traceparent",
    "close_record",
    "current_record",
    "open_record",
    "traced_record",
]

FINISHED_KEPT = 300  # finished requests the history keeps (the oldest go first)

_ids = itertools.count(1)
_LATE_NOTES = 8  # finished requests a worker's late restore note is still matched with


class RequestRecord(msgspec.Struct, kw_only=True, gc=False):
    """What is known of one request; mutable, filled in as the request goes. Not tracked by the
    garbage collector (``gc=False``: it holds no containers, so it is in no cycle): the history
    keeps hundreds alive, which would otherwise make the collector run more often."""

    id: str
    model: str = ""
    key_id: str | None = None
    klass: str = "interactive"  # the key's class= (one class without keys)
    route: str = ""
    stream: bool = False
    received: float = 0.0
    load_started: float | None = None  # the request waited for its model to load
    load_ended: float | None = None
    dispatched: float | None = None  # handed to the worker: the end of the queue wait
    first_token: float | None = None  # the first piece of a streamed answer
    ended: float | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    completion_tokens: int | None = None  # counted as the answer streams, then its own count
    prompt_ms: float | None = None
    predicted_ms: float | None = None
    restored_tokens: int | None = None  # from a saved KV cache, when the worker says so
    # The worker loaded a saved KV cache for it (its notes, docs/protocol.md §1): when it
    # began and ended.
    restore_started: float | None = None
    restore_ended: float | None = None
    # Since the first token while it streams; at the end the worker's ``predicted_per_second``.
    tokens_per_s: float | None = None
    status: int | None = None
    state: str = (
        "queued"  # queued, loading, restoring (a saved KV cache), prompt, generating, done, failed
    )
    trace_parent: str | None = None

    def dispatched_now(self) -> None:
        self.dispatched = time.time()
        self.state = "prompt"

    def chunk(self) -> None:
        """A piece of the answer arrived (called per chunk: one test after the first)."""
        if self.first_token is None:
            self.first_token = time.time()
            self.state = "generating"

    def generated(self, tokens: int) -> None:
        """``tokens`` more were generated: the count and the rate since the first token are live
        while the answer streams; the answer's own counts (its ``usage``, ``timings``) replace
        them at its end."""
        if not tokens:
            return
        self.completion_tokens = (self.completion_tokens or 0) + tokens
        if self.first_token is not None and (elapsed := time.time() - self.first_token) > 0:
            self.tokens_per_s = (self.completion_tokens - 1) / elapsed

    def restore_began(self, at: float) -> None:
        # A note that came after the first token (a late read of the worker's stdout) leaves
        # the state as it is; its time is kept.
        self.restore_started = at
        if self.state == "prompt":
            self.state = "restoring"

    def restore_done(self, at: float) -> None:
        self.restore_ended = at
        if self.state == "restoring":
            self.state = "prompt"

    def load_began(self, at: float) -> None:
        if self.dispatched is None and self.load_started is None:
            self.load_started, self.state = at, "loading"

    def load_done(self, at: float) -> None:
        if self.state == "loading":
            self.load_ended, self.state = at, "queued"


class _Pending:
    """The record of the request being handled, the history it joins if it is for a model, and
    whether it becomes a trace (docs/operations.md, Traces)."""

    __slots__ = ("history", "record", "traced")

    def __init__(self, record: RequestRecord, history: RequestHistory | None, traced: bool) -> None:
        self.record = record
        self.history = history
        self.traced = traced


_current: ContextVar[_Pending | None] = ContextVar("corral_request_record", default=None)


def current_record() -> RequestRecord | None:
    """The record of the request being handled (None outside the access-log wrapper)."""
    pending = _current.get()
    return pending.record if pending is not None else None


def traced_record() -> RequestRecord | None:
    """The record of the request being handled if it becomes a trace; else None."""
    pending = _current.get()
    return pending.record if pending is not None and pending.traced else None


def open_record(
    route: str, history: RequestHistory | None, *, traced: bool = False
) -> tuple[RequestRecord, Token[_Pending | None]]:
    """A record for a request that has just arrived, made current; the token resets it."""
    record = RequestRecord(id=f"r{next(_ids)}", route=route, received=time.time())
    return record, _current.set(_Pending(record, history, traced))


def close_record(token: Token[_Pending | None]) -> None:
    _current.reset(token)


def client_traceparent(scope: Scope) -> str | None:
    """The ``traceparent`` header the client sent, read off the ASGI scope's raw headers (a
    Litestar ``Headers`` would be built for it on every request)."""
    value = scope_header(scope, b"traceparent")
    return None if value is None else value.decode("latin-1")


def begin_request(
    model: str,
    key_id: str | None,
    route: str,
    trace_parent: str | None = None,
    klass: str = "interactive",
) -> RequestRecord | None:
    """The request is for ``model``, sent with the key ``key_id`` (None without keys) of the
    class ``klass`` to ``route`` (the path as the API's handlers see it, without
    ``--api-prefix``), and the client's ``traceparent``: it joins the history as in flight
    (once; a retry keeps its record)."""
    pending = _current.get()
    if pending is None:
        return None
    record = pending.record
    record.model, record.key_id, record.trace_parent = model, key_id, trace_parent
    record.route = route
    record.klass = klass
    if pending.history is not None:
        pending.history.begin(record)
    return record


class RequestHistory:
    """Requests in flight and the last :data:`FINISHED_KEPT` finished; ``version`` changes with
    every change, so a live view sends only when there is news."""

    def __init__(self, kept: int = FINISHED_KEPT) -> None:
        self._in_flight: dict[str, RequestRecord] = {}
        self._finished: deque[RequestRecord] = deque(maxlen=kept)
        self._loading: dict[str, float] = {}  # models loading now, since when
        self.version = 0
        self.finished: Topic[RequestRecord] = Topic()  # with its answer's counts, if it had any

    def begin(self, record: RequestRecord) -> None:
        if record.id in self._in_flight:
            return
        self._in_flight[record.id] = record
        if (since := self._loading.get(record.model)) is not None:
            record.load_began(max(since, record.received))
        self.version += 1

    def finish(self, record: RequestRecord) -> None:
        if self._in_flight.pop(record.id, None) is not None:
            self._finished.append(record)
            self.version += 1
            self.finished.publish(record)

    def model_loading(self, model: str, loading: bool) -> None:
        """A model began or ended a load: its waiting requests wait for the load, or no more."""
        now = time.time()
        if loading:
            self._loading.setdefault(model, now)
        elif self._loading.pop(model, None) is None:
            return
        for record in self._in_flight.values():
            if record.model == model:
                if loading:
                    record.load_began(now)
                else:
                    record.load_done(now)
        self.version += 1

    def restore_noted(self, payload: dict[str, Any]) -> None:
        """A worker began or ended loading a saved KV cache for a request (its note's payload,
        docs/protocol.md §1)."""
        note = parse_restore(payload)
        if note is None:
            return
        record = self._in_flight.get(note.request)
        if record is None:  # a note read after its answer's end (stdout and HTTP are not in
            # step): the newest finished; not there, another router's
            recent = itertools.islice(reversed(self._finished), _LATE_NOTES)
            record = next((r for r in recent if r.id == note.request), None)
            if record is None:
                return
        at = note.at or time.time()  # the worker's time: right even for a note read late
        if note.done:
            record.restore_done(at)
        else:
            record.restore_began(at)
        self.version += 1

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    def touched(self) -> None:
        self.version += 1

    def in_flight_records(self) -> Iterator[RequestRecord]:
        yield from self._in_flight.values()

    def records(self) -> Iterator[RequestRecord]:
        """In flight first (oldest first), then finished, newest first."""
        yield from self.in_flight_records()
        yield from reversed(self._finished)

    def finished_since(self, since: float) -> Iterable[RequestRecord]:
        """Finished requests that ended after ``since``, newest first."""
        for record in reversed(self._finished):
            if record.ended is None or record.ended <= since:
                return
            yield record
