"""The one answer pipeline: a request's completions, run on the engine and worded by shapes.

Every generating route comes here, the chat pipeline and the raw-prompt completions alike
(docs/api.md, "Several completions"): each prompt of the request runs ``n`` times
(llama-server's ``n_cmpl``, OpenAI's ``n``), side by side in the batch, and each completion is
worded by a shape of its own, built with its own
:class:`~worker.answer.answer_context.AnswerContext`. Answered whole, the OpenAI APIs gather
every completion into one body's ``choices`` and llama-server's own ``/completion`` answers a
list; streamed, the completions' chunks interleave as they come, each marked with its
``index`` (prompt by prompt, then completion by completion), and one ``[DONE]`` ends the
stream. docs/architecture.md (Code map, ``answer/``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import Any

from litestar.response.base import ASGIResponse

from corral.http.disconnect import until_disconnected
from corral.http.errors import ApiError, json_response, sse_error_event
from corral.http.streaming import SSE_HEADERS, ClosingStreamingResponse
from worker.answer.answer_context import AnswerContext, RenderedPrompt
from worker.answer.generation_request import MakeGeneration
from worker.answer.response_shape import DONE, ResponseShape
from worker.answer.sampling_fields import SamplingFields
from worker.answer.sse_pings import with_pings
from worker.engine.engine import Engine
from worker.engine.generation import (
    Delta,
    Failed,
    Finished,
    Generation,
    GenerationEvent,
    Progress,
)
from worker.sampling.grammar_sampler import InvalidGrammar
from worker.state import AnyRequest, WorkerState

__all__ = ["MakeShape", "PromptJob", "answer", "completions_per_prompt"]

MakeShape = Callable[[AnswerContext], ResponseShape]
"""Builds an API's answer shape for one completion, from that completion's context."""


@dataclass(frozen=True, slots=True)
class PromptJob:
    """One prompt of a request: how to queue its generation, and what its answers say of it."""

    make: MakeGeneration
    prompt_tokens: int  # how many tokens the prompt takes
    rendered: RenderedPrompt | None = None  # see AnswerContext.rendered


def completions_per_prompt(body: SamplingFields, n_parallel: int) -> int:
    """The request's ``n_cmpl`` (else ``n``); at most one per slot, as llama-server limits it."""
    for name, value in (("n_cmpl", body.n_cmpl), ("n", body.n)):
        if value is None:
            continue
        if not 1 <= value <= n_parallel:
            raise ApiError(
                400,
                f"Field '{name}': Value must be between 1 <= value <= {n_parallel}, "
                f"but got {value}",
            )
        return value
    return 1


async def answer(
    request: AnyRequest,
    engine: Engine,
    context: AnswerContext,
    shape: MakeShape,
    prompts: Sequence[PromptJob],
    per_prompt: int,
    stream: bool,
) -> ASGIResponse:
    """Answer ``per_prompt`` completions of each of ``prompts``, each in a shape of its own:
    one JSON body, or one stream of events.

    ``context`` is the request's; each completion's is a copy with its own place in the answer
    and its prompt's facts, so every completion shares the answer's id and creation time.
    """
    jobs = [job for job in prompts for _ in range(per_prompt)]
    work = [
        (shape(_completion(context, job, index, len(jobs))), job.make)
        for index, job in enumerate(jobs)
    ]
    try:
        if not stream:
            bodies = await asyncio.gather(*(_whole(request, engine, s, m) for s, m in work))
            # One completion's body is the answer as it is; several make one body, or a list.
            body = bodies[0] if len(bodies) == 1 else _gathered(list(bodies), per_prompt)
            return json_response(body)
        streams = await _open_all(request, engine, work)
    except InvalidGrammar as exc:  # raised as a generation is queued, before any byte is sent
        raise ApiError(400, f"invalid grammar: {exc}") from None
    if len(streams) == 1:
        return stream_response(request, streams[0])
    ending = DONE if work[0][0].done_marker else b""
    return stream_response(request, _interleaved(streams, ending))


def _completion(context: AnswerContext, job: PromptJob, index: int, count: int) -> AnswerContext:
    return replace(
        context, index=index, choices=count, prompt_tokens=job.prompt_tokens, rendered=job.rendered
    )


async def _whole(
    request: AnyRequest, engine: Engine, shape: ResponseShape, make: MakeGeneration
) -> dict[str, Any]:
    """One generation's answer as one JSON value in ``shape``."""
    events = engine.generate(make)
    text, finished = await until_disconnected(request, _collect(shape, events))
    return shape.answer(text, finished)


async def _open_all(
    request: AnyRequest, engine: Engine, work: list[tuple[ResponseShape, MakeGeneration]]
) -> list[AsyncGenerator[bytes, None]]:
    """Every generation's stream, each started; when one fails to start, none is kept."""
    opened = await asyncio.gather(
        *(_open_stream(request, engine, s, m) for s, m in work), return_exceptions=True
    )
    streams = [o for o in opened if not isinstance(o, BaseException)]
    failure = next((o for o in opened if isinstance(o, BaseException)), None)
    if failure is not None:
        for started in streams:
            await started.aclose()
        raise failure
    return streams


async def _open_stream(
    request: AnyRequest, engine: Engine, shape: ResponseShape, make: MakeGeneration
) -> AsyncGenerator[bytes, None]:
    """Start the generation and wait for its first event: a failure before any token is a
    proper JSON error (raised here); after it, the stream's events in ``shape``."""
    made: list[Generation] = []

    def making(emit: Callable[[GenerationEvent], None]) -> Generation:
        made.append(make(emit))
        return made[0]

    events = engine.generate(making)
    # A resumable session's client may leave at any time without stopping anything.
    waiting = anext(events)
    first = await (waiting if _conversation(request) else until_disconnected(request, waiting))
    if isinstance(first, Failed):
        await events.aclose()
        raise ApiError(500, first.message)
    # The engine fixed the prompt's cached part as it admitted the generation, before its
    # first event: the stream's opening can say it (Anthropic's message_start does).
    return _stream(shape, first, events, made[0].cached)


async def _collect(
    shape: ResponseShape, events: AsyncGenerator[GenerationEvent, None]
) -> tuple[str, Finished]:
    parts: list[str] = []
    async with aclosing(events):
        async for event in events:
            if isinstance(event, Delta):
                shape.observe(event)
                parts.append(event.text)
            elif isinstance(event, Finished):
                text = "".join(parts)
                return (text if event.length < 0 else text[: event.length]), event
            elif isinstance(event, Failed):
                raise ApiError(500, event.message)
    raise ApiError(500, "generation ended without a result")


async def _stream(
    shape: ResponseShape,
    first: GenerationEvent,
    events: AsyncGenerator[GenerationEvent, None],
    cached: int,
) -> AsyncGenerator[bytes, None]:
    try:
        if opening := shape.stream_opening(cached):
            yield opening
        event: GenerationEvent | None = first
        while event is not None:
            if isinstance(event, Delta):
                shape.observe(event)
                if chunk := shape.stream_chunk(event.text):
                    yield chunk
            elif isinstance(event, Progress):
                if chunk := shape.stream_progress(event):
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


def _gathered(bodies: list[dict[str, Any]], per_prompt: int) -> Any:
    """The OpenAI APIs' one body with every choice; llama-server's own list otherwise."""
    if "choices" not in bodies[0]:
        return bodies
    choices = [choice for body in bodies for choice in body["choices"]]
    # Generated tokens add up over the choices; a prompt counts once however many it has.
    prompts = bodies[::per_prompt]
    usage = {
        "prompt_tokens": sum(b["usage"]["prompt_tokens"] for b in prompts),
        "completion_tokens": sum(b["usage"]["completion_tokens"] for b in bodies),
    }
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return {**bodies[0], "choices": choices, "usage": usage}


async def _interleaved(
    streams: list[AsyncGenerator[bytes, None]], ending: bytes
) -> AsyncIterator[bytes]:
    """Each stream's chunks as they come, then ``ending``; closing this closes them all."""
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def pump(stream: AsyncGenerator[bytes, None]) -> None:
        try:
            async for chunk in stream:
                queue.put_nowait(chunk)
        finally:
            queue.put_nowait(None)

    tasks = [asyncio.create_task(pump(stream)) for stream in streams]
    try:
        running = len(tasks)
        while running:
            chunk = await queue.get()
            if chunk is None:
                running -= 1
            else:
                yield chunk
        if ending:
            yield ending
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for stream in streams:
            await stream.aclose()


def _conversation(request: AnyRequest) -> str | None:
    return request.headers.get("x-conversation-id")


def stream_response(request: AnyRequest, chunks: AsyncIterator[bytes]) -> ASGIResponse:
    """The SSE response sending ``chunks``; kept for a resumable session when it has one."""
    state: WorkerState = request.app.state.worker
    if conversation := _conversation(request):
        chunks = state.sessions.produce(conversation, chunks)
    return ClosingStreamingResponse(
        iterator=with_pings(chunks, state.settings.sse_ping_interval),
        media_type="text/event-stream",
        headers=SSE_HEADERS,
    )
