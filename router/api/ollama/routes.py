"""Ollama's REST API (``/api/*``, docs/api.md#ollamas-api): thin handlers over the serving
modules beside this one. Errors are Ollama's ``{"error": "…"}``; keys and scopes apply as on
every route (pull, delete and copy manage models: admin keys only)."""

from __future__ import annotations

import time
from typing import Any

import anyio
from litestar import Request, Router, delete, get, post
from litestar.response.base import ASGIResponse

from corral.http.errors import decode_body, json_response
from corral.http.streaming import ClosingStreamingResponse
from router.api.models import device_snapshot, gpu_memory
from router.api.ollama.errors import ollama_exception_handlers
from router.api.ollama.generation import answer_chat, answer_embed, answer_generate
from router.api.ollama.listing import peer_models, running_models, show_model, tagged_models
from router.api.ollama.lookup import find_model
from router.api.ollama.management import (
    copy_model,
    delete_model,
    pull_lines,
    pull_whole,
    start_pull,
)
from router.api.ollama.protocol import CopyRequest, DeleteRequest, PullRequest, ShowRequest
from router.api.runtime import runtime
from router.security.api_keys import admin_only
from router.security.callers import is_admin

__all__ = ["OLLAMA_VERSION", "ollama_router"]

AnyRequest = Request[Any, Any, Any]
# The Ollama release whose API this follows (clients check it before using newer fields).
OLLAMA_VERSION = "0.12.0"


@get("/version")
async def version() -> dict[str, str]:
    return {"version": OLLAMA_VERSION}


@get("/tags")
async def tags(request: AnyRequest) -> dict[str, Any]:
    rt = runtime(request)
    catalogue = rt.pool.catalogue
    # A name a ``prefer = peer`` peer answers for is listed as that peer's, as on /models.
    entries = [
        entry
        for entry in catalogue.entries.values()
        if not entry.hidden and rt.peers.route(entry.name, local=True) is None
    ]
    models = await anyio.to_thread.run_sync(tagged_models, entries, rt.ollama_copies)
    remote = rt.peers.listing(int(time.time()), lambda name: catalogue.resolve(name) is not None)
    return {"models": models + peer_models(remote)}


@get("/ps")
async def ps(request: AnyRequest) -> dict[str, Any]:
    rt = runtime(request)
    snap = device_snapshot(rt)  # one reading of the GPUs for the whole list
    states = [
        [(c, rt.scheduler.timers.expires_in(c), gpu_memory(rt, c, snap)) for c in running]
        for name in rt.pool.models
        if (running := [c for c in rt.pool.copies(name) if c.running and not c.stop_requested])
    ]
    models = await anyio.to_thread.run_sync(running_models, states, rt.ollama_copies)
    return {"models": models}


@post("/show", status_code=200)
async def show(request: AnyRequest) -> dict[str, Any]:
    body = decode_body(await request.body(), ShowRequest)
    entry = find_model(runtime(request), body.named())
    paths = is_admin(request.scope)  # inference keys see no paths (router/api/disclosure.py)
    return await anyio.to_thread.run_sync(lambda: show_model(entry, paths=paths))


@post("/chat", status_code=200)
async def chat(request: AnyRequest) -> ASGIResponse:
    return await answer_chat(request)


@post("/generate", status_code=200)
async def generate(request: AnyRequest) -> ASGIResponse:
    return await answer_generate(request)


@post("/embed", status_code=200)
async def embed(request: AnyRequest) -> ASGIResponse:
    return await answer_embed(request, legacy=False)


@post("/embeddings", status_code=200)
async def embeddings(request: AnyRequest) -> ASGIResponse:
    return await answer_embed(request, legacy=True)


@post("/pull", status_code=200, opt=admin_only())
async def pull(request: AnyRequest) -> ASGIResponse:
    rt = runtime(request)
    body = decode_body(await request.body(), PullRequest)
    job = start_pull(rt, body.named())
    if not body.stream:
        return json_response(await pull_whole(rt, job))
    return ClosingStreamingResponse(iterator=pull_lines(rt, job), media_type="application/x-ndjson")


@delete("/delete", status_code=200, opt=admin_only())
async def delete_(request: AnyRequest) -> None:
    body = decode_body(await request.body(), DeleteRequest)
    await delete_model(runtime(request), body.named())


@post("/copy", status_code=200, opt=admin_only())
async def copy(request: AnyRequest) -> None:
    body = decode_body(await request.body(), CopyRequest)
    copy_model(runtime(request), body.source, body.destination)


ollama_router = Router(
    "/api",
    route_handlers=[
        *(version, tags, ps, show, chat, generate, embed, embeddings),
        *(pull, delete_, copy),
    ],
    exception_handlers=ollama_exception_handlers,
)
