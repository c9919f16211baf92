"""The one chat pipeline: a :class:`~worker.chat_request.ChatRequest` in, an answer out.

OpenAI's chat completions use it as is; Anthropic's messages and OpenAI's responses translate
their requests into a ``ChatRequest`` at their edge and bring a :class:`ResponseShape` of their
own, so templates, tools, reasoning, grammars and budgets behave the same on every chat-shaped
API: each shape reads the output with the same :class:`~worker.chat_formats.OutputParser`.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
from litestar.response.base import ASGIResponse

from corral.errors import ApiError
from worker.chat_formats import OutputParser
from worker.chat_output import OutputPlan, plan_output
from worker.chat_request import ChatRequest
from worker.engine import Engine
from worker.generation_pipeline import answer, prepare_generation, token_budget
from worker.model import LoadedModel
from worker.response_shape import ResponseShape
from worker.state import AnyRequest, loaded

__all__ = ["ShapeFactory", "count_prompt_tokens", "run_chat"]

ShapeFactory = Callable[[str, OutputParser], ResponseShape]
"""Builds an API's answer shape from the model's alias and how to read the output."""

# Enough of the prompt's end to see whether it opens the thinking.
_PROMPT_TAIL_TOKENS = 16


async def _chat_prompt(
    engine: Engine, model: LoadedModel, body: ChatRequest
) -> tuple[list[int], OutputPlan]:
    """The conversation as prompt tokens, and how the answer is to be read."""
    plan = plan_output(
        model.template.source,
        msgspec.to_builtins(body.messages),
        body.tools,
        body.tool_choice,
        body.parallel_tool_calls,
        body.reasoning_format or model.settings.reasoning_format,
    )

    def render() -> tuple[list[int], str]:
        tokens = model.chat_prompt(plan.messages)
        return tokens, model.detokenize(tokens[-_PROMPT_TAIL_TOKENS:])

    try:
        prompt, tail = await engine.call(render)
    except Exception as exc:  # a template that cannot render these messages
        raise ApiError(400, f"cannot apply the chat template: {exc}") from None
    return prompt, plan.after_prompt(tail)


async def run_chat(request: AnyRequest, body: ChatRequest, shape: ShapeFactory) -> ASGIResponse:
    """A chat request, answered in the shape ``shape`` builds."""
    engine, model = loaded(request)
    prompt, plan = await _chat_prompt(engine, model, body)
    budget = token_budget(model, body.max_completion_tokens, body.max_tokens, body.n_predict)
    make = prepare_generation(model, body, prompt, budget, plan.grammar, plan.triggers)
    reply = shape(model.settings.alias, plan.stream if body.stream else plan.whole)
    reply.prompt_tokens = len(prompt)
    return await answer(request, engine, reply, body.stream, make)


async def count_prompt_tokens(request: AnyRequest, body: ChatRequest) -> int:
    """How many tokens ``body``'s conversation takes, as a chat would render it."""
    engine, model = loaded(request)
    prompt, _ = await _chat_prompt(engine, model, body)
    return len(prompt)
