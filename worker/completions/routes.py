"""Raw-prompt routes: the prompt is text or tokens, no chat template is applied."""

from __future__ import annotations

from litestar import post
from litestar.response.base import ASGIResponse

from corral.errors import ApiError, decode_body
from worker.completions.media_prompt import completion_prompt
from worker.completions.protocol import CompletionRequest, InfillRequest, NativeCompletionRequest
from worker.completions.shapes import NativeShape, TextShape
from worker.generation_pipeline import answer, prepare_generation, token_budget
from worker.state import AnyRequest, loaded

__all__ = ["completion_routes"]


async def _complete_text(
    request: AnyRequest,
    body_type: type[CompletionRequest] | type[NativeCompletionRequest],
    shape_type: type[TextShape] | type[NativeShape],
) -> ASGIResponse:
    """A raw-prompt completion; the two routes differ in shape and in which budget field wins."""
    engine, model = loaded(request)
    body = decode_body(await request.body(), body_type)
    prompt, media = await completion_prompt(engine, model, body.prompt)
    fields = (
        (body.max_tokens, body.n_predict)
        if body_type is CompletionRequest
        else (body.n_predict, body.max_tokens)
    )
    make = prepare_generation(model, body, prompt, token_budget(model, *fields), media=media)
    return await answer(request, engine, shape_type(model.settings.alias), body.stream, make)


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
    make = prepare_generation(
        model, body, prompt, token_budget(model, body.n_predict, body.max_tokens)
    )
    shape = NativeShape(model.settings.alias)
    return await answer(request, engine, shape, body.stream, make)


completion_routes = [completions, native_completion, infill]
