"""What the activity view shows (issue 39), bounded: requests, a model timeline, samples.

:class:`Timeline` listens to the model events (router/observe/events.py) and keeps what a
person watching the box asks about: loads, wakes, sleeps, evictions, unloads and crashes, each
with its model and time. It also tells the request history when a model's load begins and ends,
so the requests waiting for it show ``loading``. :class:`Samples` is a ring of readings taken
every few seconds (router/api/activity.py takes them): enough for an hour; :class:`Generated`
counts the tokens each interval's samples show as they were generated, not when their request
ended. :class:`Activity`
holds the three; the app makes it, the access-log wrapper and the services share it.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from router.observe.events import ModelEvent
from router.observe.requests import RequestHistory

__all__ = [
    "EVENTS_KEPT",
    "SAMPLES_KEPT",
    "SAMPLE_SECONDS",
    "Activity",
    "DeviceSample",
    "Generated",
    "ModelSample",
    "Sample",
    "Samples",
    "Timeline",
    "TimelineEvent",
]

EVENTS_KEPT = 500  # timeline events kept (the oldest go first)
SAMPLE_SECONDS = 5.0
SAMPLES_KEPT = 720  # an hour of samples, one every SAMPLE_SECONDS


class TimelineEvent(msgspec.Struct, omit_defaults=True):
    """``kind``: load (began), loaded, wake, sleep, evicted, unload, crash, load_failed."""

    at: float
    model: str
    kind: str
    detail: str | None = None


class ModelSample(msgspec.Struct, omit_defaults=True):
    tokens_per_s: float = 0.0  # tokens generated in the interval, per second
    ram: int | None = None  # the worker's resident memory, bytes
    vram: int | None = None  # what it holds on GPUs, bytes


class DeviceSample(msgspec.Struct):
    used: int
    total: int


class Sample(msgspec.Struct):
    at: float
    queue: int  # requests waiting for a model
    in_flight: int
    models: dict[str, ModelSample]
    devices: dict[str, DeviceSample]  # "RAM" (the host's) and each GPU


class Samples:
    def __init__(self, kept: int = SAMPLES_KEPT) -> None:
        self._ring: deque[Sample] = deque(maxlen=kept)

    def add(self, sample: Sample) -> None:
        self._ring.append(sample)

    def all(self) -> list[Sample]:
        return list(self._ring)

    @property
    def last(self) -> Sample | None:
        return self._ring[-1] if self._ring else None


class Generated:
    """The tokens each model generated between two readings: what its requests' counts grew by
    (router/observe/requests.py counts a stream's tokens as they come), a request that ended
    meanwhile included with its final count. A final count below the live one (the stream's
    few events around its tokens) takes back no more than the interval had."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}  # the count each request in flight had at the last read

    def since(self, history: RequestHistory, since: float) -> dict[str, int]:
        tokens: dict[str, int] = {}
        seen: dict[str, int] = {}
        for record in history.in_flight_records():
            seen[record.id] = count = record.completion_tokens or 0
            tokens[record.model] = (
                tokens.get(record.model, 0) + count - self._seen.get(record.id, 0)
            )
        for record in history.finished_since(since):
            count = (record.completion_tokens or 0) - self._seen.get(record.id, 0)
            tokens[record.model] = tokens.get(record.model, 0) + count
        self._seen = seen
        return {model: max(0, count) for model, count in tokens.items()}


class Timeline:
    """Model events as a bounded timeline; also the history's news of loads."""

    def __init__(
        self,
        history: RequestHistory,
        kept: int = EVENTS_KEPT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._history = history
        self._events: deque[TimelineEvent] = deque(maxlen=kept)
        self._status: dict[str, str] = {}  # each model's last status
        self._evicted: set[str] = set()  # stopping for another model's room
        self._clock = clock

    def events(self) -> list[TimelineEvent]:
        return list(self._events)

    def evicted(self, model: str) -> None:
        """The scheduler stops ``model`` for another's room: its unload is an eviction."""
        self._evicted.add(model)

    def on_event(self, event: ModelEvent) -> None:
        data = event.data or {}
        status = data.get("status")
        if event.event != "status_change" or not isinstance(status, str):
            return
        before = self._status.get(event.model)
        if status == before:  # load progress: one event per load
            return
        self._status[event.model] = status
        kind, detail = self._kind(event.model, before, status, data)
        self._events.append(TimelineEvent(self._clock(), event.model, kind, detail))
        if status == "loading" or before == "loading":
            self._history.model_loading(event.model, status == "loading")
        else:
            self._history.touched()

    def _kind(
        self, model: str, before: str | None, status: str, data: dict[str, object]
    ) -> tuple[str, str | None]:
        if status == "loading":
            return "load", None
        if status == "loaded":
            return ("wake" if before == "sleeping" else "loaded"), None
        if status == "sleeping":
            return "sleep", None
        evicted = model in self._evicted
        self._evicted.discard(model)
        if data.get("exit_code"):
            reason = data.get("reason") or data.get("error")
            detail = str(reason) if reason else f"exit code {data['exit_code']}"
            return ("load_failed" if before == "loading" else "crash"), detail
        return ("evicted" if evicted else "unload"), None


@dataclass(frozen=True, slots=True)
class Activity:
    history: RequestHistory = field(default_factory=RequestHistory)
    samples: Samples = field(default_factory=Samples)
    generated: Generated = field(default_factory=Generated)
    timeline: Timeline = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "timeline", Timeline(self.history))
