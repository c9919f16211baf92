"""``GET /activity`` and ``GET /activity/sse``: what the box is doing (issue 39, docs/api.md).

One snapshot: the requests in flight and the last few hundred finished
(router/observe/requests.py), the models' timeline of loads, sleeps, evictions and crashes, the
models and devices now, and the samples of the last hour (router/observe/activity.py), which
:func:`take_samples` reads every few seconds. An admin (and everyone on a router without keys)
sees every request; an inference key sees only its own, and the timeline without its errors'
paths. The stream sends a snapshot when something changed, at most once a second, with the
samples only when a new one was taken.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import msgspec
from litestar import Request, get
from litestar.response.base import ASGIResponse

from corral.http.streaming import SSE_HEADERS, ClosingStreamingResponse
from router.api.disclosure import hide_paths
from router.api.models import device_snapshot, gpu_memory, replica_view, shown_copy
from router.api.runtime import RouterRuntime, runtime
from router.capacity.memory_budget import resident_memory
from router.catalogue.listing import ReplicaView
from router.observe.activity import (
    SAMPLE_SECONDS,
    DeviceSample,
    ModelSample,
    Sample,
    TimelineEvent,
)
from router.observe.requests import RequestRecord
from router.security.callers import caller_id, is_admin

__all__ = ["ActivitySnapshot", "activity_routes", "host_memory", "take_samples"]

_STREAM_SECONDS = 1.0  # the live view's refresh, at most
_KEEPALIVE_SECONDS = 15.0


class ModelNow(msgspec.Struct, omit_defaults=True):
    name: str
    status: str
    in_flight: int = 0
    ram: int | None = None
    vram: int | None = None
    node: str | None = None  # the node of its worker, with --cluster only (docs/scaling.md)
    replicas: list[ReplicaView] | None = None  # each copy, for ``replicas`` above 1, as /models


class ActivitySnapshot(msgspec.Struct, omit_defaults=True):
    now: float
    sample_seconds: float
    models: list[ModelNow]
    devices: dict[str, DeviceSample]
    requests: list[RequestRecord]
    events: list[TimelineEvent]
    samples: list[Sample] | None = None  # absent from a stream's event without a new sample


def host_memory() -> DeviceSample | None:
    """The host's RAM in use and in all (``/proc/meminfo``: total less available)."""
    try:
        lines = open("/proc/meminfo", encoding="ascii").read().splitlines()  # noqa: SIM115
    except OSError:
        return None
    fields = {}
    for line in lines:
        name, _, rest = line.partition(":")
        fields[name] = int(rest.split()[0]) * 1024 if rest.split() else 0
    total, available = fields.get("MemTotal"), fields.get("MemAvailable")
    if total is None or available is None:
        return None
    return DeviceSample(used=total - available, total=total)


def _take_sample(rt: RouterRuntime, since: float, now: float) -> Sample:
    activity = rt.activity
    generated = activity.generated.since(activity.history, since)
    snap = device_snapshot(rt)
    models: dict[str, ModelSample] = {}
    for name in sorted(rt.pool.models):
        running = [copy for copy in rt.pool.copies(name) if copy.running]
        if not running and not generated.get(name):  # a gap in its plot, not a 0
            continue
        held = [rss for copy in running if (rss := resident_memory(copy)) is not None]
        vram = sum(sum(gpu_memory(rt, copy, snap).values()) for copy in running)
        models[name] = ModelSample(  # all its copies together
            tokens_per_s=round(generated.get(name, 0) / max(now - since, 1e-3), 2),
            ram=sum(held) if held else None,
            vram=vram or None,
        )
    devices: dict[str, DeviceSample] = {}
    if (ram := host_memory()) is not None:
        devices["RAM"] = ram
    for device in snap.devices if snap is not None else []:
        devices[device.name] = DeviceSample(used=device.used, total=device.total)
    return Sample(now, rt.scheduler.queue_depth, activity.history.in_flight, models, devices)


async def take_samples(rt: RouterRuntime) -> None:
    """Every :data:`SAMPLE_SECONDS`, one sample into the ring (a task of the services')."""
    since = time.time()
    while True:
        await anyio.sleep(SAMPLE_SECONDS)
        now = time.time()
        rt.activity.samples.add(_take_sample(rt, since, now))
        rt.activity.history.touched()
        since = now


def _snapshot(rt: RouterRuntime, scope: Any, *, samples: bool) -> ActivitySnapshot:
    activity = rt.activity
    admin = is_admin(scope)
    caller = caller_id(scope)
    records = list(activity.history.records())
    if not admin:  # an inference key's own requests; a page only ``*`` covers sees none
        records = [r for r in records if caller is not None and r.key_id == caller]
    events = activity.timeline.events()
    if not admin:
        events = [
            msgspec.structs.replace(e, detail=hide_paths(e.detail)) if e.detail else e
            for e in events
        ]
    busy: dict[str, int] = {}
    for record in records:
        if record.ended is None:
            busy[record.model] = busy.get(record.model, 0) + 1
    last = activity.samples.last
    models = []
    for name in sorted(rt.pool.models):
        copies = rt.pool.copies(name)
        state = shown_copy(copies)  # the first running copy, as /models describes it
        model = ModelNow(name, state.status.value, busy.get(name, 0))
        if state.running:
            model.node = state.node
        if state.entry.most_copies > 1:
            model.replicas = [replica_view(copy) for copy in copies]
        memory = last.models.get(name) if last is not None and state.running else None
        if memory is not None:
            model.ram, model.vram = memory.ram, memory.vram
        models.append(model)
    return ActivitySnapshot(
        now=time.time(),
        sample_seconds=SAMPLE_SECONDS,
        models=models,
        devices=last.devices if last is not None else {},
        requests=records,
        events=events,
        samples=activity.samples.all() if samples else None,
    )


_encode = msgspec.json.Encoder().encode


@get("/activity")
async def activity_now(request: Request[Any, Any, Any]) -> ASGIResponse:
    snapshot = _snapshot(runtime(request), request.scope, samples=True)
    return ASGIResponse(body=_encode(snapshot), media_type="application/json")


async def _activity_events(request: Request[Any, Any, Any]) -> AsyncIterator[bytes]:
    rt = runtime(request)
    history, samples = rt.activity.history, rt.activity.samples
    yield b": connected\n\n"  # flushes the headers at once
    sent_version, sent_sample, quiet = -1, None, 0.0
    while True:
        last = samples.last
        if history.version != sent_version or history.in_flight or last is not sent_sample:
            new_sample = last is not sent_sample
            snapshot = _snapshot(rt, request.scope, samples=new_sample or sent_version == -1)
            sent_version, sent_sample, quiet = history.version, last, 0.0
            yield b"data: " + _encode(snapshot) + b"\n\n"
        elif (quiet := quiet + _STREAM_SECONDS) >= _KEEPALIVE_SECONDS:
            quiet = 0.0
            yield b": keep-alive\n\n"
        await anyio.sleep(_STREAM_SECONDS)


@get("/activity/sse")
async def activity_stream(request: Request[Any, Any, Any]) -> ASGIResponse:
    return ClosingStreamingResponse(
        iterator=_activity_events(request), media_type="text/event-stream", headers=SSE_HEADERS
    )


activity_routes = [activity_now, activity_stream]
