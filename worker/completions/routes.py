"""Raw-prompt routes: the prompt is text or tokens, no chat template is applied."""

from __future__ import annotations

import asyncio
from typing import Any

from litestar import post
from litestar.response.base import ASGIResponse

from corral.errors import ApiError, decode_body, json_response
from worker.completions.media_prompt import completion_prompts
from worker.completions.protocol import CompletionRequest, InfillRequest, NativeCompletionRequest
from worker.completions.shapes import NativeOptions, NativeShape, TextShape
from worker.engine import Engine
from worker.generation_pipeline import (
    MakeGeneration,
    answer,
    prepare_generation,
    sampling_params,
    token_budget,
    whole_answer,
)
from worker.generation_settings import generation_settings
from worker.logit_bias import with_text_bias
from worker.model import LoadedModel
from worker.response_shape import ResponseShape
from worker.sampling import SamplingParams
from worker.state import AnyRequest, loaded

__all__ = ["completion_routes"]


def _native_options(
    model: LoadedModel,
    body: NativeCompletionRequest,
    params: SamplingParams,
    prompt_text: str,
    budget: int | None,
    index: int,
) -> NativeOptions:
    settings = generation_settings(
        params,
        n_predict=-1 if budget is None else budget,
        n_keep=model.settings.keep if body.n_keep is None else body.n_keep,
        stops=[body.stop] if isinstance(body.stop, str) else list(body.stop or []),
        ignore_eos=body.ignore_eos,
        stream=body.stream,
        n_probs=body.n_probs,
    )
    return NativeOptions(
        prompt_text=prompt_text,
        settings=settings,
        return_tokens=body.return_tokens,
        response_fields=tuple(body.response_fields),
        index=index,
    )


async def _several(
    request: AnyRequest, engine: Engine, work: list[tuple[ResponseShape, MakeGeneration]]
) -> list[dict[str, Any]]:
    """Several prompts in one request: generated side by side, answered in order."""
    return list(
        await asyncio.gather(*(whole_answer(request, engine, shape, make) for shape, make in work))
    )


@post("/v1/completions", status_code=200)
async def completions(request: AnyRequest) -> ASGIResponse:
    engine, model = loaded(request)
    body = decode_body(await request.body(), CompletionRequest)
    if body.echo:
        raise ApiError(400, "echo: only no echo is supported")
    prompts = await completion_prompts(engine, model, body.prompt)
    budget = token_budget(model, body.max_tokens, body.n_predict)
    makes = [prepare_generation(model, body, p.tokens, budget, media=p.media) for p in prompts]
    if len(makes) == 1:
        return await answer(request, engine, TextShape(model.settings.alias), body.stream, makes[0])
    if body.stream:
        raise ApiError(400, "stream: several prompts in one request are answered whole only")
    bodies = await _several(request, engine, [(TextShape(model.settings.alias), m) for m in makes])
    first = bodies[0]
    choices = [{**b["choices"][0], "index": i} for i, b in enumerate(bodies)]
    usage = {
        key: sum(b["usage"][key] for b in bodies)
        for key in ("prompt_tokens", "completion_tokens", "total_tokens")
    }
    return json_response({**first, "choices": choices, "usage": usage})


# llama-server serves the unprefixed plural with its native handler too (server.cpp): only
# /v1/completions answers in OpenAI's shape.
@post(["/completion", "/completions"], status_code=200)
async def native_completion(request: AnyRequest) -> ASGIResponse:
    engine, model = loaded(request)
    body = decode_body(await request.body(), NativeCompletionRequest)
    prompts = await completion_prompts(engine, model, body.prompt)
    budget = token_budget(model, body.n_predict, body.max_tokens)
    try:  # the prompt as text, as llama-server reports it; checks the token ids too
        texts = await engine.call(
            lambda: [model.detokenize(p.tokens) if p.text is None else p.text for p in prompts]
        )
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
    # The settings as they will run: text biases as the tokens they ban.
    unresolved = sampling_params(model, body)
    params = await engine.call(lambda: with_text_bias(unresolved, model.vocab))
    work: list[tuple[ResponseShape, MakeGeneration]] = []
    for index, (prompt, text) in enumerate(zip(prompts, texts, strict=True)):
        make = prepare_generation(model, body, prompt.tokens, budget, media=prompt.media)
        options = _native_options(model, body, params, text, budget, index)
        work.append((NativeShape(model.settings.alias, options), make))
    if len(work) == 1:
        shape, make = work[0]
        return await answer(request, engine, shape, body.stream, make)
    if body.stream:
        raise ApiError(400, "stream: several prompts in one request are answered whole only")
    return json_response(await _several(request, engine, work))


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
    make = prepare_generation(
        model, body, prompt, token_budget(model, body.n_predict, body.max_tokens)
    )
    shape = NativeShape(model.settings.alias)
    return await answer(request, engine, shape, body.stream, make)


completion_routes = [completions, native_completion, infill]
