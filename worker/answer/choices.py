"""Several completions in one request: ``n`` per prompt, and several prompts (docs/api.md).

llama-server's ``n_cmpl`` (or OpenAI's ``n``, its alias) runs each prompt that many times, side
by side in the batch; a request with several prompts runs each of them. Answered whole, the
OpenAI APIs gather every completion into one body's ``choices`` and llama-server's own
``/completion`` answers a list; streamed, the completions' chunks interleave as they come, each
marked with its ``index`` (prompt by prompt, then completion by completion), and one
``[DONE]`` ends the stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any

from litestar.response.base import ASGIResponse

from corral.http.errors import ApiError, json_response
from worker.answer.generation_pipeline import (
    MakeGeneration,
    answer,
    open_stream,
    stream_response,
    whole_answer,
)
from worker.answer.response_shape import ResponseShape
from worker.answer.sampling_fields import SamplingFields
from worker.engine.engine import Engine
from worker.state import AnyRequest

__all__ = ["answer_all", "completions_per_prompt"]

_DONE = b"data: [DONE]\n\n"


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


async def answer_all(
    request: AnyRequest,
    engine: Engine,
    work: Sequence[tuple[ResponseShape, MakeGeneration]],
    stream: bool,
    per_prompt: int = 1,
) -> ASGIResponse:
    """Answer every (shape, generation) of ``work``, in order: ``per_prompt`` completions of
    the first prompt, then of the next."""
    if len(work) == 1:
        shape, make = work[0]
        return await answer(request, engine, shape, stream, make)
    first = work[0][0]
    for index, (shape, _) in enumerate(work):
        # One answer: one id, and each completion its place in it.
        shape.id, shape.created, shape.index = first.id, first.created, index
    if not stream:
        bodies = await asyncio.gather(*(whole_answer(request, engine, s, m) for s, m in work))
        return json_response(_gathered(list(bodies), per_prompt))
    done = first.done_marker
    for shape, _ in work:
        shape.done_marker = False
    opened = await asyncio.gather(
        *(open_stream(request, engine, s, m) for s, m in work), return_exceptions=True
    )
    streams = [o for o in opened if not isinstance(o, BaseException)]
    failure = next((o for o in opened if isinstance(o, BaseException)), None)
    if failure is not None:
        for started in streams:
            await started.aclose()
        raise failure
    return stream_response(request, _interleaved(streams, _DONE if done else b""))


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
