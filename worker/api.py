"""The worker's HTTP routes: thin handlers over :class:`worker.model.LoadedModel`.

Every route but the model info answers 503 "Loading model" until the model is loaded, as
llama-server does, so the router can tell "starting" from "broken".
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec
import structlog
from litestar import Litestar, Request, get, post
from litestar.datastructures import State
from litestar.response.base import ASGIResponse

from router.disconnect import until_disconnected
from router.errors import (
    ApiError,
    decode_body,
    exception_handlers,
    json_response,
    sse_error_event,
)
from router.streaming import SSE_HEADERS, ClosingStreamingResponse
from worker.engine import Cancelled, Engine
from worker.model import LoadedModel
from worker.protocol import (
    ChatRequest,
    CompletionRequest,
    DetokenizeRequest,
    NativeCompletionRequest,
    SamplingFields,
    TokenizeRequest,
)
from worker.settings import WorkerSettings

__all__ = ["WorkerState", "create_worker_app"]

_log = structlog.get_logger("corral.worker.api")
Req = TypeVar("Req", bound=SamplingFields)
AnyRequest = Request[Any, Any, Any]


@dataclass
class WorkerState:
    settings: WorkerSettings
    engine: Engine
    model: LoadedModel | None = None
    started: float = field(default_factory=time.time)


def _state(request: AnyRequest) -> tuple[Engine, LoadedModel]:
    state: WorkerState = request.app.state.worker
    if state.model is None:
        raise ApiError(503, "Loading model")
    return state.engine, state.model


def _client_error(exc: Exception) -> ApiError:
    """Errors raised by llama-cpp-python for bad input, as the SPEC's error values."""
    message = str(exc)
    if "exceed context window" in message:
        return ApiError(400, message, "exceed_context_size_error")
    return ApiError(400, message)


def _sse(item: Any) -> bytes:
    return b"data: " + msgspec.json.encode(item) + b"\n\n"


async def _relay(first: Any, rest: AsyncIterator[Any], done_marker: bool) -> AsyncIterator[bytes]:
    try:
        yield _sse(first)
        async for item in rest:
            yield _sse(item)
        if done_marker:
            yield b"data: [DONE]\n\n"
    except Cancelled:
        return
    except ValueError as exc:
        yield sse_error_event(_client_error(exc))
    except Exception:
        _log.exception("generation failed mid-stream")
        yield sse_error_event(ApiError(500, "generation failed"))
    finally:
        await rest.aclose()  # type: ignore[attr-defined]


async def _generate(
    request: AnyRequest,
    type_: type[Req],
    run: Callable[[LoadedModel, Req, threading.Event], Any],
    *,
    done_marker: bool = True,
) -> ASGIResponse:
    engine, model = _state(request)
    body = decode_body(await request.body(), type_)
    try:
        if not body.stream:
            result = await until_disconnected(request, engine.call(lambda c: run(model, body, c)))
            return json_response(result)
        items = engine.stream(lambda c: run(model, body, c))
        # Wait for the first chunk before answering, so that an error in the prompt (too long,
        # bad template) is a proper JSON error with its status rather than an event after a 200.
        first = await until_disconnected(request, items.__anext__())
    except ValueError as exc:
        raise _client_error(exc) from None
    return ClosingStreamingResponse(
        iterator=_relay(first, items, done_marker),
        media_type="text/event-stream",
        headers=SSE_HEADERS,
    )


@post(["/v1/chat/completions", "/chat/completions"], status_code=200)
async def chat_completions(request: AnyRequest) -> ASGIResponse:
    return await _generate(request, ChatRequest, LoadedModel.chat)


@post(["/v1/completions", "/completions"], status_code=200)
async def completions(request: AnyRequest) -> ASGIResponse:
    return await _generate(request, CompletionRequest, LoadedModel.completion)


@post("/completion", status_code=200)
async def native_completion(request: AnyRequest) -> ASGIResponse:
    return await _generate(
        request, NativeCompletionRequest, LoadedModel.native_completion, done_marker=False
    )


@post("/tokenize", status_code=200)
async def tokenize(request: AnyRequest) -> dict[str, Any]:
    engine, model = _state(request)
    body = decode_body(await request.body(), TokenizeRequest)
    return await engine.call(lambda _: model.tokenize(body))


@post("/detokenize", status_code=200)
async def detokenize(request: AnyRequest) -> dict[str, Any]:
    engine, model = _state(request)
    body = decode_body(await request.body(), DetokenizeRequest)
    try:
        return await engine.call(lambda _: model.detokenize(body.tokens))
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None


@get("/health")
async def health(request: AnyRequest) -> dict[str, str]:
    _state(request)
    return {"status": "ok"}


@get("/props")
async def props(request: AnyRequest) -> dict[str, Any]:
    _, model = _state(request)
    settings = model.settings
    return {
        "model_alias": settings.alias,
        "model_path": str(settings.model),
        "total_slots": 1,
        "chat_template": model.chat_template,
        "default_generation_settings": {
            "n_ctx": model.llama.n_ctx(),
            "params": {"temperature": settings.temperature, "n_predict": settings.n_predict},
        },
        "modalities": {"vision": False, "audio": False},
        "build_info": "corral",
    }


@get(["/v1/models", "/models"])
async def models(request: AnyRequest) -> dict[str, Any]:
    state: WorkerState = request.app.state.worker
    _, model = _state(request)
    entry = {**model.info(), "created": int(state.started)}
    return {"object": "list", "data": [entry]}


def create_worker_app(state: WorkerState) -> Litestar:
    return Litestar(
        route_handlers=[
            chat_completions,
            completions,
            native_completion,
            tokenize,
            detokenize,
            health,
            props,
            models,
        ],
        exception_handlers=exception_handlers,
        state=State({"worker": state}),
        logging_config=None,
        debug=False,
    )
