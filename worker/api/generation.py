"""Generation routes: chat, OpenAI completions and llama-server's ``/completion``.

:func:`run_chat` is the one chat pipeline; other APIs (Anthropic messages, OpenAI responses)
translate their requests into a :class:`~worker.protocol.ChatRequest` and their answers from a
:class:`~worker.responses.ResponseShape` of their own.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from typing import Any

import msgspec
from litestar import Response, post
from litestar.response.base import ASGIResponse

from corral.disconnect import until_disconnected
from corral.errors import ApiError, decode_body, json_response, sse_error_event
from corral.streaming import SSE_HEADERS, ClosingStreamingResponse
from worker.api.state import AnyRequest, WorkerState, loaded
from worker.batching import Delta, Failed, Finished, Generation, GenerationEvent
from worker.engine import Engine
from worker.grammars import GrammarError, grammar_for
from worker.model import LoadedModel
from worker.protocol import (
    ChatRequest,
    CompletionRequest,
    InfillRequest,
    NativeCompletionRequest,
    SamplingFields,
)
from worker.responses import ChatShape, NativeShape, ResponseShape, TextShape, ToolChatShape
from worker.sampling import SamplingParams
from worker.tools import ToolPlan, plan_tools

__all__ = [
    "ContextError",
    "ShapeFactory",
    "context_error_response",
    "count_prompt_tokens",
    "generation_routes",
    "run_chat",
]


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
        raise ContextError(body)


class ContextError(ApiError):
    """llama-server adds the sizes to this one error, so clients can shorten their prompt."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(400, body["error"]["message"], "exceed_context_size_error")
        self.body = body


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
        if opening := shape.stream_opening():
            yield opening
        event: GenerationEvent | None = first
        while event is not None:
            if isinstance(event, Delta):
                if chunk := shape.stream_chunk(event.text):
                    yield chunk
            elif isinstance(event, Finished):
                yield shape.stream_closing(event)
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
    conversation = request.headers.get("x-conversation-id")
    # The first event decides the status: a failure before any token is a proper JSON error.
    # A resumable session's client may leave at any time without stopping anything.
    waiting = anext(events)
    first = await (waiting if conversation else until_disconnected(request, waiting))
    if isinstance(first, Failed):
        await events.aclose()
        raise ApiError(500, first.message)
    chunks = _stream(shape, first, events)
    if conversation:
        state: WorkerState = request.app.state.worker
        chunks = state.sessions.produce(conversation, chunks)
    return ClosingStreamingResponse(
        iterator=chunks, media_type="text/event-stream", headers=SSE_HEADERS
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


ShapeFactory = Callable[[str, ToolPlan | None], ResponseShape]


async def _chat_prompt(
    engine: Engine, model: LoadedModel, body: ChatRequest
) -> tuple[list[int], ToolPlan | None]:
    """The conversation as prompt tokens, and the tool plan when the request has tools."""
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
    return prompt, plan


def _chat_shape(alias: str, plan: ToolPlan | None) -> ResponseShape:
    return ChatShape(alias) if plan is None else ToolChatShape(alias, plan)


async def run_chat(
    request: AnyRequest, body: ChatRequest, shape: ShapeFactory = _chat_shape
) -> ASGIResponse:
    """A chat request, answered in the shape ``shape`` builds; other APIs translate into it."""
    engine, model = loaded(request)
    prompt, plan = await _chat_prompt(engine, model, body)
    budget = _budget(model, body.max_completion_tokens, body.max_tokens, body.n_predict)
    make = await _generation(
        engine, model, body, prompt, budget, plan.grammar if plan is not None else None
    )
    answer = shape(model.settings.alias, plan)
    answer.prompt_tokens = len(prompt)
    return await _generate(request, model, engine, answer, body.stream, make)


async def count_prompt_tokens(request: AnyRequest, body: ChatRequest) -> int:
    """How many tokens ``body``'s conversation takes, as a chat would render it."""
    engine, model = loaded(request)
    prompt, _ = await _chat_prompt(engine, model, body)
    return len(prompt)


@post(["/v1/chat/completions", "/chat/completions"], status_code=200)
async def chat_completions(request: AnyRequest) -> ASGIResponse:
    return await run_chat(request, decode_body(await request.body(), ChatRequest))


async def _complete_text(
    request: AnyRequest,
    body_type: type[CompletionRequest] | type[NativeCompletionRequest],
    shape_type: type[TextShape] | type[NativeShape],
) -> ASGIResponse:
    """A raw-prompt completion; the two routes differ in shape and in which budget field wins."""
    engine, model = loaded(request)
    body = decode_body(await request.body(), body_type)
    prompt = await engine.call(lambda: model.text_prompt(body.prompt))
    fields = (
        (body.max_tokens, body.n_predict)
        if body_type is CompletionRequest
        else (body.n_predict, body.max_tokens)
    )
    make = await _generation(engine, model, body, prompt, _budget(model, *fields))
    return await _generate(
        request, model, engine, shape_type(model.settings.alias), body.stream, make
    )


@post(["/v1/completions", "/completions"], status_code=200)
async def completions(request: AnyRequest) -> ASGIResponse:
    return await _complete_text(request, CompletionRequest, TextShape)


@post("/completion", status_code=200)
async def native_completion(request: AnyRequest) -> ASGIResponse:
    return await _complete_text(request, NativeCompletionRequest, NativeShape)


@post("/infill", status_code=200)
async def infill(request: AnyRequest) -> ASGIResponse:
    engine, model = loaded(request)
    body = decode_body(await request.body(), InfillRequest)
    extra = [(chunk.filename, chunk.text) for chunk in body.input_extra]
    try:
        prompt = await engine.call(
            lambda: model.infill_prompt(body.input_prefix, body.input_suffix, body.prompt, extra)
        )
    except ValueError as exc:
        raise ApiError(501, str(exc)) from None
    make = await _generation(
        engine, model, body, prompt, _budget(model, body.n_predict, body.max_tokens)
    )
    shape = NativeShape(model.settings.alias)
    return await _generate(request, model, engine, shape, body.stream, make)


def context_error_response(request: AnyRequest, exc: ContextError) -> Response[dict[str, Any]]:
    return Response(exc.body, status_code=400)


generation_routes = [chat_completions, completions, native_completion, infill]
