"""Routes about the model rather than generation: health, props, tokens, slots, metrics."""

from __future__ import annotations

from typing import Any

from litestar import get, post
from litestar.params import FromPath
from litestar.response.base import ASGIResponse

from corral.http.errors import ApiError, decode_body
from corral.http.worker_routes import (
    APPLY_TEMPLATE,
    DETOKENIZE,
    HEALTH,
    METRICS,
    MODEL,
    MODELS,
    PROPS,
    TOKENIZE,
)
from worker.api.model_info.prometheus_metrics import ScrapeWindow, render_metrics
from worker.api.model_info.props import props_body
from worker.api.model_info.protocol import ApplyTemplateRequest, DetokenizeRequest, TokenizeRequest
from worker.chat.pipeline import plan_chat
from worker.state import AnyRequest, WorkerState, loaded
from worker.templates import TemplateRenderError

__all__ = ["model_info_routes"]


@post(TOKENIZE.paths, status_code=200)
async def tokenize(request: AnyRequest) -> dict[str, Any]:
    engine, model = loaded(request)
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


@post(DETOKENIZE.paths, status_code=200)
async def detokenize(request: AnyRequest) -> dict[str, Any]:
    engine, model = loaded(request)
    body = decode_body(await request.body(), DetokenizeRequest)
    try:
        return {"content": await engine.call(lambda: model.detokenize(body.tokens))}
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None


@post(APPLY_TEMPLATE.paths, status_code=200)
async def apply_template(request: AnyRequest) -> dict[str, str]:
    """The prompt a chat request would be turned into, without generating."""
    engine, model = loaded(request)
    body = decode_body(await request.body(), ApplyTemplateRequest)
    # The chat routes' plan: tools reach the prompt as they reach the model (the template's
    # own description, or the generic tool mode's instructions).
    plan, tools = await plan_chat(model, body.messages, body.tools, body.tool_choice)
    templates = model.template
    try:
        render = templates.request(
            plan.messages, tools, body.chat_template_kwargs, body.add_generation_prompt
        )
        prompt = await engine.call(lambda: templates.render(render), needs_model=False)
    except TemplateRenderError as exc:
        raise ApiError(400, f"cannot apply the chat template: {exc}") from None
    return {"prompt": prompt}


@get(METRICS.paths)
async def metrics(request: AnyRequest) -> ASGIResponse:
    state: WorkerState = request.app.state.worker
    engine, model = loaded(request)
    if not state.settings.metrics:
        raise ApiError(
            501, "This server does not support metrics endpoint. Start it with `--metrics`"
        )
    window: ScrapeWindow = request.app.state.scrape_window
    text = await engine.call(lambda: render_metrics(model, window), needs_model=False)
    return ASGIResponse(
        body=text.encode(),
        media_type="text/plain; version=0.0.4",  # Litestar adds the charset
        # llama-server's header: Prometheus clients derive process uptime from it.
        headers={"Process-Start-Time-Unix": str(int(state.started))},
    )


@get(HEALTH.paths)  # both, as llama-server
async def health(request: AnyRequest) -> dict[str, Any]:
    engine, _ = loaded(request)
    # Answered by the event loop, so a frozen process fails it by not answering; a wedged
    # engine thread shows as a growing busy time (the router's stall watchdog reads it).
    return {"status": "ok", "engine_busy_seconds": round(engine.busy_seconds(), 3)}


@get(PROPS.paths)
async def props(request: AnyRequest) -> dict[str, Any]:
    _, model = loaded(request)
    return props_body(model)


def _entry(request: AnyRequest) -> dict[str, Any]:
    state: WorkerState = request.app.state.worker
    _, model = loaded(request)
    return {**model.info(), "created": int(state.started)}


@get(MODELS.paths)
async def models(request: AnyRequest) -> dict[str, Any]:
    return {"object": "list", "data": [_entry(request)]}


@get(MODEL.paths)
async def model_entry(request: AnyRequest, model_id: FromPath[str]) -> dict[str, Any]:
    """The one entry ``/v1/models`` lists, by its id or an alias (OpenAI's ``models.retrieve``;
    a hub name's slash kept by the path parameter, which keeps a leading slash too)."""
    entry, name = _entry(request), model_id.removeprefix("/")
    if name != entry["id"] and name not in entry["aliases"]:
        raise ApiError(404, f"model '{name}' not found")
    return entry


model_info_routes = [
    tokenize,
    detokenize,
    health,
    props,
    models,
    model_entry,
    apply_template,
    metrics,
]
