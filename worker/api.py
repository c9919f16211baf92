"""The worker's HTTP routes: thin handlers over :class:`worker.model.LoadedModel`.

Every route answers 503 "Loading model" until the model is loaded, as llama-server does, so the
router can tell "starting" from "broken".
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import msgspec
import structlog
from litestar import Litestar, Request, Response, get, post
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
from router.metrics import prometheus_family
from router.streaming import SSE_HEADERS, ClosingStreamingResponse
from worker.batching import Delta, Failed, Finished, Generation, GenerationEvent
from worker.engine import Engine
from worker.grammars import GrammarError, grammar_for
from worker.model import LoadedModel
from worker.protocol import (
    ChatMessage,
    ChatRequest,
    CompletionRequest,
    DetokenizeRequest,
    NativeCompletionRequest,
    SamplingFields,
    TokenizeRequest,
)
from worker.responses import ChatShape, NativeShape, ResponseShape, TextShape, ToolChatShape
from worker.sampling import SamplingParams
from worker.settings import WorkerSettings
from worker.tools import plan_tools

__all__ = ["WorkerState", "create_worker_app"]

_log = structlog.get_logger("corral.worker.api")
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


def _sampling(
    model: LoadedModel, body: SamplingFields, tool_grammar: str | None = None
) -> SamplingParams:
    settings = model.settings
    bias: dict[int, float] = {}
    if isinstance(body.logit_bias, dict):
        try:
            bias = {int(token): value for token, value in body.logit_bias.items()}
        except ValueError:
            raise ApiError(400, "logit_bias keys must be token ids") from None
    elif body.logit_bias:
        bias = {int(pair[0]): pair[1] for pair in body.logit_bias if len(pair) == 2}
    if any(not 0 <= token < model.n_vocab for token in bias):
        raise ApiError(400, "logit_bias has a token id outside the vocabulary")
    seed = body.seed if body.seed is not None else settings.seed
    try:
        grammar = grammar_for(body.grammar, body.json_schema, body.response_format)
    except GrammarError as exc:
        raise ApiError(400, str(exc)) from None
    if tool_grammar is not None:
        if grammar is not None:
            raise ApiError(
                400, "tools cannot be combined with grammar, json_schema or response_format"
            )
        grammar = tool_grammar
    return SamplingParams(
        temperature=settings.temperature if body.temperature is None else body.temperature,
        top_k=body.top_k,
        top_p=body.top_p,
        min_p=body.min_p,
        typical_p=body.typical_p,
        repeat_penalty=body.repeat_penalty,
        repeat_last_n=body.repeat_last_n,
        presence_penalty=body.presence_penalty,
        frequency_penalty=body.frequency_penalty,
        seed=seed,
        logit_bias=bias,
        grammar=grammar,
    )


def _budget(model: LoadedModel, *requested: int | None) -> int | None:
    """The first token budget the client gave, else ``--n-predict``; -1 means to the context."""
    budget = next((value for value in requested if value is not None), model.settings.n_predict)
    return None if budget < 0 else budget


def _stops(stop: str | list[str] | None) -> list[str]:
    if stop is None:
        return []
    return [stop] if isinstance(stop, str) else list(stop)


def _check_context(model: LoadedModel, prompt: list[int]) -> None:
    n_ctx = model.batcher.n_ctx_seq
    if not prompt:
        raise ApiError(400, "the prompt is empty")
    if len(prompt) >= n_ctx:
        error = ApiError(
            400,
            f"request ({len(prompt)} tokens) exceeds the available context size ({n_ctx} "
            "tokens), try increasing it",
            "exceed_context_size_error",
        )
        body = {**msgspec.to_builtins(error.envelope()), "n_prompt_tokens": len(prompt)}
        body["error"]["n_ctx"] = n_ctx
        raise _ContextError(body)


class _ContextError(ApiError):
    """llama-server adds the sizes to this one error, so clients can shorten their prompt."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(400, body["error"]["message"], "exceed_context_size_error")
        self.body = body


def _sse(item: Any) -> bytes:
    return b"data: " + msgspec.json.encode(item) + b"\n\n"


async def _collect(events: AsyncGenerator[GenerationEvent, None]) -> tuple[str, Finished]:
    parts: list[str] = []
    async with aclosing(events):
        async for event in events:
            if isinstance(event, Delta):
                parts.append(event.text)
            elif isinstance(event, Finished):
                return "".join(parts), event
            else:
                raise ApiError(500, event.message)
    raise ApiError(500, "generation ended without a result")


async def _stream(
    shape: ResponseShape, first: GenerationEvent, events: AsyncGenerator[GenerationEvent, None]
) -> AsyncIterator[bytes]:
    try:
        opening = shape.opening()
        if opening is not None:
            yield _sse(opening)
        event: GenerationEvent | None = first
        while event is not None:
            if isinstance(event, Delta):
                chunk = shape.chunk(event.text)
                if chunk is not None:
                    yield _sse(chunk)
            elif isinstance(event, Finished):
                yield _sse(shape.closing(event))
                if shape.done_marker:
                    yield b"data: [DONE]\n\n"
                return
            elif isinstance(event, Failed):
                yield sse_error_event(ApiError(500, event.message))
                return
            event = await anext(events, None)
    finally:
        await events.aclose()


async def _generate(
    request: AnyRequest,
    model: LoadedModel,
    engine: Engine,
    shape: ResponseShape,
    stream: bool,
    make: Callable[[Callable[[GenerationEvent], None]], Generation],
) -> ASGIResponse:
    events = engine.generate(make)
    if not stream:
        text, finished = await until_disconnected(request, _collect(events))
        return json_response(shape.whole(text, finished))
    # The first event decides the status: a failure before any token is a proper JSON error.
    first = await until_disconnected(request, anext(events))
    if isinstance(first, Failed):
        await events.aclose()
        raise ApiError(500, first.message)
    return ClosingStreamingResponse(
        iterator=_stream(shape, first, events), media_type="text/event-stream", headers=SSE_HEADERS
    )


async def _generation(
    engine: Engine,
    model: LoadedModel,
    body: SamplingFields,
    prompt: list[int],
    max_tokens: int | None,
    tool_grammar: str | None = None,
) -> Callable[[Callable[[GenerationEvent], None]], Generation]:
    params = _sampling(model, body, tool_grammar)
    _check_context(model, prompt)
    stops = _stops(body.stop)
    if params.grammar is not None:
        # Parsed now, so that a bad grammar is a 400 rather than a failed stream.
        try:
            await engine.call(lambda: model.check_grammar(params))
        except ValueError as exc:
            raise ApiError(400, f"invalid grammar: {exc}") from None

    def make(emit: Callable[[GenerationEvent], None]) -> Generation:
        return Generation(
            prompt=prompt,
            params=params,
            max_tokens=max_tokens,
            emit=emit,
            stops=stops,
            ignore_eos=body.ignore_eos,
            cache_prompt=body.cache_prompt,
        )

    return make


@post(["/v1/chat/completions", "/chat/completions"], status_code=200)
async def chat_completions(request: AnyRequest) -> ASGIResponse:
    engine, model = _state(request)
    body = decode_body(await request.body(), ChatRequest)
    messages = msgspec.to_builtins(body.messages)
    try:
        plan = plan_tools(body.tools, body.tool_choice)
    except GrammarError as exc:
        raise ApiError(400, str(exc)) from None
    if plan is not None:
        messages = plan.prepare(messages)
    try:
        prompt = await engine.call(lambda: model.chat_prompt(messages, None))
    except Exception as exc:  # a template that cannot render these messages
        raise ApiError(400, f"cannot apply the chat template: {exc}") from None
    budget = _budget(model, body.max_completion_tokens, body.max_tokens, body.n_predict)
    make = await _generation(
        engine, model, body, prompt, budget, plan.grammar if plan is not None else None
    )
    alias = model.settings.alias
    shape = ChatShape(alias) if plan is None else ToolChatShape(alias, plan)
    return await _generate(request, model, engine, shape, body.stream, make)


@post(["/v1/completions", "/completions"], status_code=200)
async def completions(request: AnyRequest) -> ASGIResponse:
    engine, model = _state(request)
    body = decode_body(await request.body(), CompletionRequest)
    prompt = await engine.call(lambda: model.text_prompt(body.prompt))
    make = await _generation(
        engine, model, body, prompt, _budget(model, body.max_tokens, body.n_predict)
    )
    return await _generate(
        request, model, engine, TextShape(model.settings.alias), body.stream, make
    )


@post("/completion", status_code=200)
async def native_completion(request: AnyRequest) -> ASGIResponse:
    engine, model = _state(request)
    body = decode_body(await request.body(), NativeCompletionRequest)
    prompt = await engine.call(lambda: model.text_prompt(body.prompt))
    make = await _generation(
        engine, model, body, prompt, _budget(model, body.n_predict, body.max_tokens)
    )
    return await _generate(
        request, model, engine, NativeShape(model.settings.alias), body.stream, make
    )


@post("/tokenize", status_code=200)
async def tokenize(request: AnyRequest) -> dict[str, Any]:
    engine, model = _state(request)
    body = decode_body(await request.body(), TokenizeRequest)

    def run() -> dict[str, Any]:
        tokens = model.tokenize(
            body.content, add_special=body.add_special, parse_special=body.parse_special
        )
        if not body.with_pieces:
            return {"tokens": tokens}
        pieces = []
        for token in tokens:
            raw = model.piece(token)
            try:
                piece: str | list[int] = raw.decode()
            except UnicodeDecodeError:  # part of a UTF-8 sequence: upstream sends the bytes
                piece = list(raw)
            pieces.append({"id": token, "piece": piece})
        return {"tokens": pieces}

    return await engine.call(run)


@post("/detokenize", status_code=200)
async def detokenize(request: AnyRequest) -> dict[str, Any]:
    engine, model = _state(request)
    body = decode_body(await request.body(), DetokenizeRequest)
    try:
        return {"content": await engine.call(lambda: model.detokenize(body.tokens))}
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None


class ApplyTemplateRequest(msgspec.Struct):
    messages: list[ChatMessage]


@post("/apply-template", status_code=200)
async def apply_template(request: AnyRequest) -> dict[str, str]:
    """The prompt a chat request would be turned into, without generating."""
    engine, model = _state(request)
    body = decode_body(await request.body(), ApplyTemplateRequest)
    messages = msgspec.to_builtins(body.messages)
    try:
        prompt = await engine.call(lambda: model.template.render(messages))
    except Exception as exc:
        raise ApiError(400, f"cannot apply the chat template: {exc}") from None
    return {"prompt": prompt}


def _render_metrics(model: LoadedModel) -> str:
    m = model.batcher.metrics
    busy = sum(1 for slot in model.batcher.slots if slot.generation is not None)

    def rate(tokens: float, seconds: float) -> float:
        return tokens / seconds if seconds else 0.0

    counters = [
        (
            "prompt_tokens_total",
            "Number of prompt tokens processed, excluding cached tokens",
            m.prompt_tokens,
        ),
        (
            "prompt_tokens_cached_total",
            "Number of prompt tokens reused from the cache",
            m.prompt_tokens_cached,
        ),
        ("prompt_seconds_total", "Total time spent processing prompts", m.prompt_seconds),
        ("tokens_predicted_total", "Number of generation tokens processed", m.tokens_predicted),
        (
            "tokens_predicted_seconds_total",
            "Total time spent generating tokens",
            m.tokens_predicted_seconds,
        ),
        ("n_decode_total", "Total number of llama_decode() calls", m.n_decode),
        ("n_tokens_max", "Largest observed sequence length (prompt + generation)", m.n_tokens_max),
    ]
    gauges = [
        ("prompt_tokens_seconds", "Average prompt throughput in tokens/s",
         rate(m.prompt_tokens, m.prompt_seconds)),
        ("predicted_tokens_seconds", "Average generation throughput in tokens/s",
         rate(m.tokens_predicted, m.tokens_predicted_seconds)),
        ("requests_processing", "Number of requests processing", busy),
        ("requests_deferred", "Number of requests deferred", len(model.batcher.waiting)),
        ("n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call",
         m.n_busy_slots / max(m.n_decode, 1)),
    ]  # fmt: skip
    lines: list[str] = []
    for kind, items in (("counter", counters), ("gauge", gauges)):
        for name, help_, value in items:
            lines += prometheus_family(f"llamacpp:{name}", kind, help_, [("", float(value))])
    return "\n".join(lines) + "\n"


@get("/metrics")
async def metrics(request: AnyRequest) -> ASGIResponse:
    engine, model = _state(request)
    text = await engine.call(lambda: _render_metrics(model))
    return ASGIResponse(body=text.encode(), media_type="text/plain; version=0.0.4; charset=utf-8")


@get("/slots")
async def slots(request: AnyRequest) -> list[dict[str, Any]]:
    engine, model = _state(request)
    return await engine.call(model.batcher.describe_slots)


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
        "total_slots": settings.parallel,
        "chat_template": model.template.source,
        "default_generation_settings": {
            "n_ctx": model.batcher.n_ctx_seq,
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


def _context_error(request: AnyRequest, exc: _ContextError) -> Response[dict[str, Any]]:
    return Response(exc.body, status_code=400)


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
            slots,
            apply_template,
            metrics,
        ],
        exception_handlers={**exception_handlers, _ContextError: _context_error},
        state=State({"worker": state}),
        logging_config=None,
        debug=False,
    )
