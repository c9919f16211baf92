"""Router-local routes: health, router props and the model list (docs/protocol.md §3)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
import msgspec
from litestar import Request, get, post
from litestar.params import FromPath, FromQuery
from litestar.response.base import ASGIResponse
from msgspec import UNSET

from corral.http.errors import ApiError, decode_body, json_response
from corral.http.streaming import SSE_HEADERS, ClosingStreamingResponse
from corral.http.worker_routes import MODEL, PROPS
from corral.hub.mmproj_inputs import input_modalities
from corral.hub.sizes import files_size
from corral.llama_build import corral_version, llama_build_info
from corral.suggest import closest
from router.api.anthropic_models import (
    PageQuery,
    anthropic_model,
    anthropic_page,
    wants_anthropic,
)
from router.api.disclosure import (
    JsonRewrite,
    event_for_inference,
    listing_for_inference,
    props_for_inference,
)
from router.api.inference import forward_to_model
from router.api.runtime import RouterRuntime, runtime
from router.availability.errors import ModelNotFound
from router.capacity.memory_budget import resident_memory
from router.catalogue.capabilities import capabilities
from router.catalogue.catalogue import CatalogueEntry, CatalogueError
from router.catalogue.file_check import entry_problem
from router.catalogue.listing import ListingStatus, ModelListing, ReplicaView
from router.catalogue.model_details import model_header
from router.observe.events import ModelEvent
from router.scheduling.answers import api_error, scheduling_answered
from router.scheduling.placement.device_snapshot import DeviceSnapshot
from router.security.api_keys import admin_only
from router.security.callers import is_admin
from router.single_model import ollama_models
from router.workers.child_supervisor import EXIT_CANNOT_START
from router.workers.model_state import BAD_FILE, ModelState, Status

__all__ = [
    "device_snapshot",
    "gpu_memory",
    "model_in_body",
    "model_routes",
    "replica_view",
    "shown_copy",
]

AnyRequest = Request[Any, Any, Any]


@get(["/health", "/v1/health"])
async def health(request: AnyRequest) -> dict[str, str]:
    rt = runtime(request)
    # As llama-server with one model: 503 until it is loaded, so that what waits for a healthy
    # server (a container's health check, a client's start-up loop) waits for the model.
    if rt.settings.single_model and any(
        state.status is Status.LOADING for state in rt.pool.models.values()
    ):
        raise ApiError(503, "Loading model", "unavailable_error")
    return {"status": "ok"}


@get(PROPS.paths)
async def props(request: AnyRequest, model: FromQuery[str | None] = None) -> ASGIResponse:
    settings = runtime(request).settings
    if model or settings.single_model:
        # llama-server with one model answers /props itself; so does that model's worker here.
        hidden = None if is_admin(request.scope) else JsonRewrite(props_for_inference)
        return await forward_to_model(request, model, None, translation=hidden)
    return json_response(
        {
            "role": "router",
            "max_instances": settings.scheduler_limits.most_resident,
            "models_autoload": settings.models_autoload,
            # Corral's: whether one key's prompt caches serve (and tell) another key's
            # requests: "shared" with --cache-share or without keys (docs/security.md).
            "cache_scope": "key" if settings.cache_scoped else "shared",
            # Placeholders upstream sends so llama.cpp's own Web UI does not break.
            "model_alias": "llama-server",
            "model_path": "none",
            "default_generation_settings": {"params": {}, "n_ctx": 0},
            "ui_settings": settings.ui_settings,
            "build_info": llama_build_info(),
            "corral_version": corral_version(),
            "cors_proxy_enabled": False,
        }
    )


def _status(state: ModelState, retry_after: float, problem: str | None = None) -> ListingStatus:
    status = ListingStatus(
        value=state.status.value, args=state.args, preset=state.entry.preset_text()
    )
    if state.failed:
        status.failed, status.exit_code, status.error = True, state.exit_code, state.error
        # Corral's own: why the router killed it ("stalled", "load_stalled"), else it crashed;
        # and how long the crash-loop backoff keeps it from loading again.
        status.reason, status.retry_after = state.failure_reason, round(retry_after, 3)
    elif problem is not None and not state.running:
        # An unusable file, found before any load: listed as a load would leave it (docs/api.md).
        status.failed, status.exit_code, status.error = True, EXIT_CANNOT_START, problem
        status.reason, status.retry_after = BAD_FILE, 0.0
    return status


def _read_headers(entries: list[CatalogueEntry]) -> dict[str, str | None]:
    """What is wrong with each model's files, what its projector reads and whether it is an
    embedding model: header walks, in a thread (their verdicts are kept, so the listing then
    finds them at no cost)."""
    problems = {}
    for entry in entries:
        problems[entry.name] = entry_problem(entry)
        input_modalities(entry.mmproj)
        model_header(entry.path)
    return problems


def _entry(
    state: ModelState,
    created: int,
    retry_after: float = 0.0,
    on_gpus: Mapping[str, int] | None = None,
    problem: str | None = None,
) -> ModelListing:
    """One model's entry; ``on_gpus``: what its worker holds per GPU (the device planner's
    reading, the driver's figure where it has one), else what the worker reported;
    ``problem``: what is wrong with its files."""
    can = capabilities(state.entry, model_header(state.entry.path))
    entry = ModelListing(
        id=state.entry.name,
        aliases=list(state.entry.aliases),
        tags=list(state.entry.tags),
        owned_by="llamacpp",
        created=created,
        status=_status(state, retry_after, problem),
        source=state.entry.source,
        can_remove=state.entry.source == "cache",
        pinned=state.entry.pin,
        ttl=state.entry.ttl,
        tools=list(state.entry.tools) if state.entry.tools is not None else None,
        size=files_size(state.entry.files()),
        architecture={"input_modalities": list(can.inputs), "output_modalities": ["text"]},
        capabilities=can.corral_words(),
    )
    if state.running and state.meta is not None:
        entry.meta = state.meta
    if state.running and state.process is not None:
        # The worker's resident memory (one /proc read, cheap enough per listing), and what it
        # reported holding on each GPU once loaded.
        rss = resident_memory(state)
        on_gpus = dict(state.gpu_held if on_gpus is None else on_gpus)
        memory: dict[str, Any] = {"rss": rss} if rss is not None else {}
        if on_gpus:
            memory |= {"vram": sum(on_gpus.values()), "devices": on_gpus}
        entry.memory = memory or None
    placement = state.placement
    if state.running and state.node is not None:
        entry.node = state.node
    if state.running and placement is not None and placement.devices:
        entry.placement = {
            "devices": list(placement.devices),
            "fits": placement.fits,
            "needed": placement.needed,
            "fit_target_mib": list(placement.fit_target_mib),
            "tensor_split": list(placement.tensor_split),
        }
    return entry


def device_snapshot(rt: RouterRuntime) -> DeviceSnapshot | None:
    """One reading of the GPUs for a whole listing, as for a scheduling decision
    (router/scheduling/placement/device_snapshot.py); None without a device planner."""
    planner = rt.scheduler.devices
    return planner.snapshot() if planner is not None else None


def gpu_memory(
    rt: RouterRuntime, state: ModelState, snap: DeviceSnapshot | None = None
) -> dict[str, int]:
    """Bytes per GPU a model's worker holds: the device planner's reading (the driver's figure
    where it has one), else what the worker reported; {} when it holds none."""
    planner = rt.scheduler.devices
    if planner is not None and state.running:
        return planner.in_use(state, snap)
    return state.gpu_held


def _devices(snap: DeviceSnapshot | None) -> list[dict[str, Any]]:
    """Every GPU the router sees, with its memory now (``devices`` of ``GET /models``)."""
    return [
        {
            "name": device.name,
            "description": device.description,
            "total": device.total,
            "free": device.free,
            "used": device.used,
        }
        for device in (snap.devices if snap is not None else [])
    ]


async def _listing(
    rt: RouterRuntime, admin: bool
) -> tuple[list[ModelListing], DeviceSnapshot | None]:
    """Every model's entry, sorted by id (an inference key's without paths or command lines),
    and the GPU reading they were made from."""
    created = int(time.time())
    models = rt.pool.models
    catalogue = rt.pool.catalogue
    listed = [
        shown_copy(rt.pool.copies(state.name))
        for state in models.values()
        # A name a ``prefer = peer`` peer answers for is listed as that peer's.
        if not state.entry.hidden and rt.peers.route(state.entry.name, local=True) is None
    ]
    problems = await anyio.to_thread.run_sync(_read_headers, [state.entry for state in listed])
    snap = device_snapshot(rt)
    data = [
        _entry(
            state,
            created,
            rt.scheduler.timers.retry_after(state),
            gpu_memory(rt, state, snap),
            problems.get(state.name),
        )
        for state in listed
    ]
    for entry, state in zip(data, listed, strict=True):
        entry.queue = rt.scheduler.queue_view(state) or UNSET
        if state.entry.most_copies > 1:
            entry.replicas = [replica_view(copy) for copy in rt.pool.copies(state.name)]
    data += rt.peers.listing(created, lambda name: catalogue.resolve(name) is not None)
    downloads = rt.downloads.jobs.values()
    data += [job.list_entry(created) for job in downloads if job.name not in models]
    data.sort(key=lambda entry: entry.id)
    if not admin:  # no paths or command lines (router/api/disclosure.py)
        data = [listing_for_inference(entry) for entry in data]
    names = rt.settings.one_model.names
    if rt.settings.single_model and len(models) == 1 and names:
        # As llama-server: every --alias, the id included. Any other name reaches the
        # model too (single_model_target), the file's own among them.
        for entry in data:
            entry.aliases = sorted(set(names))
    return data, snap


def shown_copy(copies: tuple[ModelState, ...]) -> ModelState:
    """The copy a model's entry describes: the first that runs, else the first."""
    return next((copy for copy in copies if copy.running), copies[0])


def replica_view(copy: ModelState) -> ReplicaView:
    replica = ReplicaView(copy=copy.copy, status=copy.status.value, in_flight=copy.in_flight)
    if copy.running and copy.node is not None:
        replica.node = copy.node
    if copy.running and (rss := resident_memory(copy)) is not None:
        replica.rss = rss
    return replica


@get(["/models", "/v1/models"], opt=admin_only(when_query="reload"))
async def list_models(
    request: AnyRequest,
    reload: FromQuery[str | None] = None,
    limit: FromQuery[int | None] = None,
    after_id: FromQuery[str | None] = None,
    before_id: FromQuery[str | None] = None,
) -> ASGIResponse:
    rt = runtime(request)
    if reload:
        try:
            await rt.reloader.reload()
        except CatalogueError as exc:
            raise ApiError(500, f"reload failed: {exc}") from None
    data, snap = await _listing(rt, is_admin(request.scope))
    if wants_anthropic(request.headers):  # Anthropic's SDKs: a page of their entries
        return json_response(anthropic_page(data, PageQuery(limit, after_id, before_id)))
    listing: dict[str, Any] = {"object": "list", "data": data}
    devices = _devices(snap)
    if devices:  # Corral's own, beside the list: what each GPU holds now
        listing["devices"] = devices
    models = rt.pool.models
    if rt.settings.single_model and len(models) == 1:
        listing["models"] = ollama_models(next(iter(models.values())).entry)
    return json_response(listing)


@get(MODEL.paths)
async def retrieve_model(request: AnyRequest, model_id: FromPath[str]) -> ASGIResponse:
    """One model's entry, as listed (OpenAI's and Anthropic's ``models.retrieve``); an alias, or
    a tag spelled in another case, finds its model's."""
    rt = runtime(request)
    model_id = model_id.removeprefix("/")  # a path parameter keeps its leading slash
    data, _ = await _listing(rt, is_admin(request.scope))
    local = rt.pool.catalogue.resolve(model_id)
    name = local.name if local is not None else model_id
    entry = next((e for e in data if e.id == name or model_id in e.aliases), None)
    if entry is None:  # worded as any route's unknown model, with the closest ids
        ids = tuple(e.id for e in data)
        raise api_error(ModelNotFound(model_id, tuple(closest(model_id, ids)), ids))
    if wants_anthropic(request.headers):
        return json_response(anthropic_model(entry))
    return json_response(entry)


class ModelRequest(msgspec.Struct):
    model: str | None = None


def model_in_body(body: bytes) -> str:
    """The request body's ``model``; 400 when it is missing or empty."""
    name = decode_body(body, ModelRequest).model
    if not name:
        raise ApiError(400, "model must be a non-empty string")
    return name


def _not_a_peers(rt: RouterRuntime, name: str) -> None:
    """A peer's model loads and unloads on the peer, not here (docs/scaling.md)."""
    route = rt.peers.route(name, local=rt.pool.catalogue.resolve(name) is not None)
    if route is not None:
        raise ApiError(400, f"model '{name}' is served by peer '{route.peer.name}'")


@post("/models/load", status_code=200, opt=admin_only())
async def load_model(request: AnyRequest) -> dict[str, bool]:
    """Start loading now, bypassing the queue; answers once the worker is spawned."""
    name = model_in_body(await request.body())
    _not_a_peers(runtime(request), name)
    with scheduling_answered():
        await runtime(request).scheduler.load_now(name)
    return {"success": True}


@post("/models/unload", status_code=200, opt=admin_only())
async def unload_model(request: AnyRequest) -> dict[str, bool]:
    """Stop a model; answers at once, the exit shows up as a status change.

    A download is cancelled instead, and the answer waits until its process has ended.
    """
    rt = runtime(request)
    name = model_in_body(await request.body())
    download = rt.downloads.find(name)
    if download is not None and download.downloading:
        await rt.downloads.cancel(download)
        return {"success": True}
    _not_a_peers(rt, name)
    with scheduling_answered():
        state = rt.pool.get(name)
    # Every copy of it (``replicas``, docs/scaling.md).
    running = [c for c in rt.pool.copies(state.name) if c.running and not c.stop_requested]
    if not running:
        raise ApiError(400, "model is not running")
    for copy in running:
        rt.pool.request_stop(copy)
    return {"success": True}


# Keep-alive comments at least this often, so proxies and browsers keep the stream open.
SSE_KEEPALIVE_SECONDS = 15.0
_encode_event = msgspec.json.Encoder().encode


async def _model_events(request: AnyRequest) -> AsyncIterator[bytes]:
    events = runtime(request).pool.events
    admin = is_admin(request.scope)
    subscription = events.subscribe()
    try:
        yield b": connected\n\n"  # flushes the headers at once
        while True:
            batch: list[ModelEvent] = await subscription.next_batch(SSE_KEEPALIVE_SECONDS)
            if not batch:
                yield b": keep-alive\n\n"
            for event in batch:
                shown = event if admin else event_for_inference(event)
                yield b"data: " + _encode_event(shown) + b"\n\n"
    finally:
        events.unsubscribe(subscription)


@get("/models/sse")
async def model_events(request: AnyRequest) -> ASGIResponse:
    return ClosingStreamingResponse(
        iterator=_model_events(request), media_type="text/event-stream", headers=SSE_HEADERS
    )


model_routes = [health, props, list_models, retrieve_model, load_model, unload_model, model_events]
