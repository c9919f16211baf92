"""Raw-prompt routes: the prompt is text or tokens, no chat template is applied."""

from __future__ import annotations

from litestar import post
from litestar.response.base import ASGIResponse

from corral.http.errors import ApiError, decode_body
from corral.http.worker_routes import COMPLETION, COMPLETIONS, INFILL
from worker.answer.answer_context import AnswerContext, RenderedPrompt
from worker.answer.generation_request import (
    body_grammar,
    prepare_generation,
    sampling_params,
    token_budget,
    verbose_prompt,
)
from worker.answer.native_answer import request_settings
from worker.answer.pipeline import PromptJob, answer, completions_per_prompt
from worker.api.completions.media_prompt import completion_prompts
from worker.api.completions.protocol import (
    CompletionRequest,
    InfillRequest,
    NativeCompletionRequest,
)
from worker.api.completions.shapes import NativeOptions, NativeShape, TextShape
from worker.engine.model import LoadedModel
from worker.sampling.logit_bias import with_text_bias
from worker.state import AnyRequest, loaded

__all__ = ["completion_routes"]


def _n_parallel(model: LoadedModel) -> int:
    return len(model.batcher.slots)


@post(COMPLETIONS.paths, status_code=200)
async def completions(request: AnyRequest) -> ASGIResponse:
    engine, model = loaded(request)
    body = decode_body(await request.body(), CompletionRequest)
    if body.echo:
        raise ApiError(400, "echo: only no echo is supported")
    per_prompt = completions_per_prompt(body, _n_parallel(model))
    prompts = await completion_prompts(engine, model, body.prompt)
    budget = token_budget(model, body.max_tokens, body.n_predict)
    grammar = await body_grammar(body)
    jobs: list[PromptJob] = []
    for prompt in prompts:
        make = prepare_generation(model, body, grammar, prompt.tokens, budget, media=prompt.media)
        rendered = await verbose_prompt(engine, model, body, grammar, prompt.tokens, budget)
        jobs.append(PromptJob(make, len(prompt.tokens), rendered))
    context = AnswerContext(model.settings.alias)
    return await answer(request, engine, context, TextShape, jobs, per_prompt, body.stream)


# llama-server serves the unprefixed plural with its native handler too (server.cpp): only
# /v1/completions answers in OpenAI's shape.
@post(COMPLETION.paths, status_code=200)
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
    grammar = await body_grammar(body)
    unresolved = sampling_params(model, body, grammar)
    params = await engine.call(lambda: with_text_bias(unresolved, model.vocab))
    settings = request_settings(model, body, params, budget)
    jobs = [
        PromptJob(
            prepare_generation(model, body, grammar, prompt.tokens, budget, media=prompt.media),
            len(prompt.tokens),
            RenderedPrompt(text, settings),
        )
        for prompt, text in zip(prompts, texts, strict=True)
    ]
    options = NativeOptions(body.return_tokens, tuple(body.response_fields))
    context = AnswerContext(model.settings.alias)
    return await answer(
        request,
        engine,
        context,
        lambda c: NativeShape(c, options),
        jobs,
        per_prompt,
        body.stream,
    )


@post(INFILL.paths, status_code=200)
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
        model,
        body,
        await body_grammar(body),
        prompt,
        token_budget(model, body.n_predict, body.max_tokens),
    )
    job = PromptJob(make, len(prompt))
    context = AnswerContext(model.settings.alias)
    return await answer(request, engine, context, NativeShape, [job], 1, body.stream)


completion_routes = [completions, native_completion, infill]
