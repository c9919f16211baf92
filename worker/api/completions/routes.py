"""Raw-prompt routes: the prompt is text or tokens, no chat template is applied."""

from __future__ import annotations

from litestar import post
from litestar.response.base import ASGIResponse

from corral.http.errors import ApiError, decode_body
from worker.answer.choices import answer_all, completions_per_prompt
from worker.answer.generation_pipeline import (
    MakeGeneration,
    answer,
    prepare_generation,
    sampling_params,
    token_budget,
    verbose_answer,
)
from worker.answer.native_answer import request_settings
from worker.answer.response_shape import ResponseShape
from worker.api.completions.media_prompt import completion_prompts
from worker.api.completions.protocol import (
    CompletionRequest,
    InfillRequest,
    NativeCompletionRequest,
)
from worker.api.completions.shapes import NativeOptions, NativeShape, TextShape
from worker.engine.model import LoadedModel
from worker.sampling.chain import SamplingParams
from worker.sampling.logit_bias import with_text_bias
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
    return NativeOptions(
        prompt_text=prompt_text,
        settings=request_settings(model, body, params, budget),
        return_tokens=body.return_tokens,
        response_fields=tuple(body.response_fields),
        index=index,
    )


def _n_parallel(model: LoadedModel) -> int:
    return len(model.batcher.slots)


@post("/v1/completions", status_code=200)
async def completions(request: AnyRequest) -> ASGIResponse:
    engine, model = loaded(request)
    body = decode_body(await request.body(), CompletionRequest)
    if body.echo:
        raise ApiError(400, "echo: only no echo is supported")
    per_prompt = completions_per_prompt(body, _n_parallel(model))
    prompts = await completion_prompts(engine, model, body.prompt)
    budget = token_budget(model, body.max_tokens, body.n_predict)
    work: list[tuple[ResponseShape, MakeGeneration]] = []
    for prompt in prompts:
        make = prepare_generation(model, body, prompt.tokens, budget, media=prompt.media)
        verbose = await verbose_answer(engine, model, body, prompt.tokens, budget)
        for _ in range(per_prompt):
            shape = TextShape(model.settings.alias)
            shape.verbose = verbose
            work.append((shape, make))
    return await answer_all(request, engine, work, body.stream, per_prompt)


# llama-server serves the unprefixed plural with its native handler too (server.cpp): only
# /v1/completions answers in OpenAI's shape.
@post(["/completion", "/completions"], status_code=200)
async def native_completion(request: AnyRequest) -> ASGIResponse:
    engine, model = loaded(request)
    body = decode_body(await request.body(), NativeCompletionRequest)
    per_prompt = completions_per_prompt(body, _n_parallel(model))
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
    for prompt, text in zip(prompts, texts, strict=True):
        make = prepare_generation(model, body, prompt.tokens, budget, media=prompt.media)
        options = _native_options(model, body, params, text, budget, len(work))
        work += [(NativeShape(model.settings.alias, options), make) for _ in range(per_prompt)]
    return await answer_all(request, engine, work, body.stream, per_prompt)


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
