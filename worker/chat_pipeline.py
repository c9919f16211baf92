"""The one chat pipeline: a :class:`~worker.chat_request.ChatRequest` in, an answer out.

OpenAI's chat completions use it as is; Anthropic's messages and OpenAI's responses translate
their requests into a ``ChatRequest`` at their edge and bring a :class:`ResponseShape` of their
own, so templates, tools, grammars and budgets behave the same on every chat-shaped API.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
from litestar.response.base import ASGIResponse

from corral.errors import ApiError
from worker.chat_request import ChatRequest
from worker.chat_templates import TemplateRenderError
from worker.engine import Engine
from worker.generation_pipeline import answer, prepare_generation, token_budget
from worker.grammars import GrammarError
from worker.media.chat_media import chat_media_prompt
from worker.media.projector import MediaPrompt
from worker.model import LoadedModel
from worker.response_shape import ResponseShape
from worker.state import AnyRequest, loaded
from worker.tools import ToolPlan, plan_tools

__all__ = ["ShapeFactory", "count_prompt_tokens", "run_chat"]

ShapeFactory = Callable[[str, ToolPlan | None], ResponseShape]
"""Builds an API's answer shape from the model's alias and the request's tool plan."""


async def _chat_prompt(
    engine: Engine, model: LoadedModel, body: ChatRequest
) -> tuple[list[int], ToolPlan | None, MediaPrompt | None]:
    """The conversation as prompt tokens, the tool plan when the request has tools, and its
    images or audio when it has some."""
    messages = msgspec.to_builtins(body.messages)
    try:
        plan = plan_tools(body.tools, body.tool_choice)
    except GrammarError as exc:
        raise ApiError(400, str(exc)) from None
    # A template that describes tools gets them, in the model's own words, as llama-server
    # hands them over (even with tool_choice none); the others keep the generic tool mode.
    tools = body.tools if model.template.caps.supports_tools else None
    if plan is not None and tools is None:
        messages = plan.prepare(messages)
    media = await chat_media_prompt(engine, model, messages, tools, body.chat_template_kwargs)
    if media is not None:
        return media.tokens, plan, media
    try:
        render = model.template.request(messages, tools, body.chat_template_kwargs)
        prompt = await engine.call(lambda: model.chat_prompt(render))
    except TemplateRenderError as exc:
        raise ApiError(400, f"cannot apply the chat template: {exc}") from None
    return prompt, plan, None


async def run_chat(request: AnyRequest, body: ChatRequest, shape: ShapeFactory) -> ASGIResponse:
    """A chat request, answered in the shape ``shape`` builds."""
    engine, model = loaded(request)
    prompt, plan, media = await _chat_prompt(engine, model, body)
    budget = token_budget(model, body.max_completion_tokens, body.max_tokens, body.n_predict)
    make = prepare_generation(
        model, body, prompt, budget, plan.grammar if plan is not None else None, media
    )
    reply = shape(model.settings.alias, plan)
    reply.prompt_tokens = len(prompt)
    return await answer(request, engine, reply, body.stream, make)


async def count_prompt_tokens(request: AnyRequest, body: ChatRequest) -> int:
    """How many tokens ``body``'s conversation takes, as a chat would render it."""
    engine, model = loaded(request)
    prompt, _, _ = await _chat_prompt(engine, model, body)
    return len(prompt)
