"""Ollama's chat, generate and embeddings requests, answered by the model's worker.

Each request is translated into the worker's own API (router/api/ollama/translate.py), sent
through the same relay as every other request (scheduler, lease, autoload, stall watchdog,
disconnects), and its answer translated back (router/api/ollama/answers.py). A model a peer
serves is asked the same way, on the peer's OpenAI-compatible routes (a llama-server will do).

How long a model stays loaded is management (docs/security.md, "Key holders"): an inference
key's ``keep_alive`` is read (a malformed one is still a 400) and then ignored, so its chats
work as they would with an admin key while the model keeps the lifetime its admin gave it; an
empty prompt (Ollama's load, or unload with ``keep_alive: 0``) is refused to it (403), as
``POST /models/load`` and ``/models/unload`` are.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import msgspec
from litestar import Request
from litestar.response.base import ASGIResponse

from corral.http.errors import ApiError, decode_body, json_response
from router.api.inference import forward_to_model
from router.api.ollama.answers import OllamaAnswer, created_at, error_body, worker_error
from router.api.ollama.keep_alive import keep_alive_seconds
from router.api.ollama.lookup import find_served
from router.api.ollama.protocol import (
    ChatRequest,
    EmbeddingsRequest,
    EmbedRequest,
    GenerateRequest,
    KeepAlive,
)
from router.api.ollama.translate import WorkerCall, chat_call, generate_call
from router.api.runtime import RouterRuntime, runtime
from router.catalogue.capabilities import capabilities
from router.catalogue.catalogue import CatalogueEntry
from router.catalogue.model_details import model_details
from router.scheduling.answers import scheduling_answered
from router.security.callers import is_admin
from router.workers.model_state import ModelState

__all__ = ["answer_chat", "answer_embed", "answer_generate"]

AnyRequest = Request[Any, Any, Any]
_encode = msgspec.json.Encoder().encode
_EMBEDDINGS = b"/v1/embeddings"


async def answer_chat(request: AnyRequest) -> ASGIResponse:
    chat = decode_body(await request.body(), ChatRequest)
    translate = lambda name: chat_call(chat, name)  # noqa: E731
    return await _generation(request, chat, translate, empty=not chat.messages)


async def answer_generate(request: AnyRequest) -> ASGIResponse:
    generate = decode_body(await request.body(), GenerateRequest)
    empty = not generate.prompt and not generate.images and not generate.suffix
    translate = lambda name: generate_call(generate, name)  # noqa: E731
    return await _generation(request, generate, translate, empty=empty)


async def _generation(
    request: AnyRequest,
    body: ChatRequest | GenerateRequest,
    translate: Callable[[str], WorkerCall],
    *,
    empty: bool,
) -> ASGIResponse:
    rt = runtime(request)
    started = time.perf_counter()
    found = find_served(rt, body.model)
    call = translate(found.name)  # a bad body is refused before any load
    if found.entry is not None and body.think not in (None, False):
        await _refuse_thinking(found.entry, body.model)
    chat = isinstance(body, ChatRequest)
    load_seconds: Callable[[], float] = lambda: 0.0  # noqa: E731  (a peer's load is its own)
    if empty:  # Ollama's way to load (or, with keep_alive 0, unload) a model
        _may_load_or_unload(request)
    if found.entry is not None:
        with scheduling_answered():
            state = rt.pool.get(found.name)
        keep_alive = _keep_alive(request, rt, state, body.keep_alive)
        if empty:
            unload = keep_alive == 0
            return await _load_or_unload(request, rt, state, body, chat=chat, unload=unload)
        if not state.serving:  # it waits for a load (or for a stopping worker and a load)
            load_seconds = lambda: state.load_seconds  # noqa: E731
    elif empty:  # a peer loads the model when it is asked; its keep-alive is its own
        return _loaded(body, chat=chat, unload=False)
    answer = OllamaAnswer(
        body.model, chat=chat, streamed=body.stream, started=started, load_seconds=load_seconds
    )
    # A peer's model is asked the same way, on the peer's OpenAI-compatible routes.
    return await forward_to_model(
        request, found.name, call.body, target=call.target, translation=answer
    )


async def _refuse_thinking(entry: CatalogueEntry, name: str) -> None:
    """As Ollama: ``think`` (true or a level) on a model that cannot think is a 400, loads
    included, rather than a chat whose thinking never comes. Whether it can is what
    ``/api/show``'s capabilities say (its header's template, read in a thread); a peer's model
    is left to its peer."""
    details = await anyio.to_thread.run_sync(model_details, entry)
    if not capabilities(entry, details.metadata).thinking:
        # Ollama's words: the name as the request spelled it, quoted as Go's %q quotes it.
        raise ApiError(400, f"{json.dumps(name, ensure_ascii=False)} does not support thinking")


def _may_load_or_unload(request: AnyRequest) -> None:
    if not is_admin(request.scope):
        message = "this key may not load or unload models (it is an inference key)"
        raise ApiError(403, message, "permission_error")


def _keep_alive(
    request: AnyRequest, rt: RouterRuntime, state: ModelState, value: KeepAlive | None
) -> float | None:
    """The request's keep-alive in seconds, which becomes the model's if an admin sent it."""
    if value is None:
        return None
    seconds = keep_alive_seconds(value)
    if is_admin(request.scope):
        rt.pool.keep_alive(state, seconds)
    return seconds


async def _load_or_unload(
    request: AnyRequest,
    rt: RouterRuntime,
    state: ModelState,
    body: ChatRequest | GenerateRequest,
    *,
    chat: bool,
    unload: bool,
) -> ASGIResponse:
    if unload:
        for copy in rt.pool.copies(state.name):  # every copy (``replicas``)
            rt.pool.request_stop(copy)
    else:
        await _load(request, rt, state)
    return _loaded(body, chat=chat, unload=unload)


def _loaded(body: ChatRequest | GenerateRequest, *, chat: bool, unload: bool) -> ASGIResponse:
    value: dict[str, Any] = {"model": body.model, "created_at": created_at()}
    if chat:
        value["message"] = {"role": "assistant", "content": ""}
    else:
        value["response"] = ""
    value |= {"done": True, "done_reason": "unload" if unload else "load"}
    media = "application/x-ndjson" if body.stream else "application/json"
    line = _encode(value) + (b"\n" if body.stream else b"")
    return ASGIResponse(body=line, media_type=media)


async def _load(request: AnyRequest, rt: RouterRuntime, state: ModelState) -> None:
    """Load the model if it is not running (a lease, given back when the request ends)."""
    with scheduling_answered():
        lease = rt.scheduler.acquire_if_ready(state.name, request.scope)
        if lease is None:
            lease = await rt.scheduler.acquire(state.name, request.scope)
    rt.scheduler.touch(lease.state)  # its keep-alive counts from now


class _EmbedAnswer:
    """The worker's OpenAI embeddings as ``/api/embed``'s (or the older ``/api/embeddings``')."""

    media_type = "application/json"

    def __init__(self, model: str, *, single: bool, started: float) -> None:
        self._model, self._single, self._started = model, single, started

    def whole(self, status: int, body: bytes) -> tuple[int, bytes]:
        if status == 501:  # a peer's llama-server run without --embeddings: the model can't
            return 400, error_body(f'"{self._model}" does not support embeddings')
        if status >= 400:
            return worker_error(status, body)
        answer = msgspec.json.decode(body)
        vectors = [item["embedding"] for item in sorted(answer["data"], key=lambda d: d["index"])]
        if self._single:
            return 200, _encode({"embedding": vectors[0] if vectors else []})
        return 200, _encode(
            {
                "model": self._model,
                "embeddings": vectors,
                "total_duration": int((time.perf_counter() - self._started) * 1e9),
                "load_duration": 0,
                "prompt_eval_count": int(answer.get("usage", {}).get("prompt_tokens", 0)),
            }
        )

    async def stream(self, events: AsyncIterator[bytes]) -> AsyncIterator[bytes]:  # never used
        async for chunk in events:
            yield chunk

    def error(self, error: ApiError) -> bytes:
        return error_body(error.message)


async def answer_embed(request: AnyRequest, *, legacy: bool) -> ASGIResponse:
    """``/api/embed`` (``input``: a text or a list) or ``/api/embeddings`` (``prompt``)."""
    raw = await request.body()
    started = time.perf_counter()
    body: EmbedRequest | EmbeddingsRequest
    if legacy:
        body = decode_body(raw, EmbeddingsRequest)
        inputs = [body.prompt]
    else:
        body = decode_body(raw, EmbedRequest)
        inputs = [body.input] if isinstance(body.input, str) else body.input
    rt = runtime(request)
    found = find_served(rt, body.model)
    if found.entry is not None:
        with scheduling_answered():
            state = rt.pool.get(found.name)
        _keep_alive(request, rt, state, body.keep_alive)
        if not any(inputs):  # as Ollama: nothing to embed loads the model
            _may_load_or_unload(request)
            await _load(request, rt, state)
    if not any(inputs):
        return json_response({"model": body.model, "embeddings": []})
    # As Ollama, a generative model embeds too: the worker makes an embeddings context beside
    # the generation's on first use (worker/api/embeddings/routes.py), never restarting the model.
    call = _encode(
        {"model": found.name, "input": inputs, "encoding_format": "float", "generative": True}
    )
    answer = _EmbedAnswer(body.model, single=legacy, started=started)
    return await forward_to_model(request, found.name, call, target=_EMBEDDINGS, translation=answer)
