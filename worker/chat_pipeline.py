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
from worker.reasoning_budget import ReasoningBudget
from worker.response_shape import ResponseShape
from worker.state import AnyRequest, loaded

__all__ = ["ShapeFactory", "count_prompt_tokens", "run_chat"]

ShapeFactory = Callable[[str, OutputParser], ResponseShape]
"""Builds an API's answer shape from the model's alias and how to read the output."""

# Enough of the prompt's end to see whether it opens the thinking.
_PROMPT_TAIL_TOKENS = 16


def _budget(body: ChatRequest, model: LoadedModel) -> int:
    """The request's thinking budget, else ``--reasoning-budget``; -1 is no budget."""
    asked = max(body.reasoning_budget_tokens, body.thinking_budget_tokens)
    return asked if asked >= 0 else model.settings.reasoning_budget


async def _chat_prompt(
    engine: Engine, model: LoadedModel, body: ChatRequest
) -> tuple[list[int], OutputPlan, ReasoningBudget | None]:
    """The conversation as prompt tokens, how the answer is to be read, its thinking budget."""
    plan = plan_output(
        model.template.source,
        msgspec.to_builtins(body.messages),
        body.tools,
        body.tool_choice,
        body.parallel_tool_calls,
        body.reasoning_format or model.settings.reasoning_format,
    )
    budget, tags = _budget(body, model), plan.format.thinking

    def render() -> tuple[list[int], OutputPlan, ReasoningBudget | None]:
        tokens = model.chat_prompt(plan.messages)
        read = plan.after_prompt(model.detokenize(tokens[-_PROMPT_TAIL_TOKENS:]))
        if budget < 0 or tags is None:
            return tokens, read, None
        start, end = (
            tuple(model.tokenize(tag, add_special=False)) for tag in (tags.start, tags.end)
        )
        return tokens, read, ReasoningBudget(budget, start, end, read.whole.thinking_open)

    try:
        return await engine.call(render)
    except Exception as exc:  # a template that cannot render these messages
        raise ApiError(400, f"cannot apply the chat template: {exc}") from None


async def run_chat(request: AnyRequest, body: ChatRequest, shape: ShapeFactory) -> ASGIResponse:
    """A chat request, answered in the shape ``shape`` builds."""
    engine, model = loaded(request)
    prompt, plan, thinking = await _chat_prompt(engine, model, body)
    budget = token_budget(model, body.max_completion_tokens, body.max_tokens, body.n_predict)
    make = prepare_generation(model, body, prompt, budget, plan.grammar, plan.triggers, thinking)
    reply = shape(model.settings.alias, plan.stream if body.stream else plan.whole)
    reply.prompt_tokens = len(prompt)
    return await answer(request, engine, reply, body.stream, make)


async def count_prompt_tokens(request: AnyRequest, body: ChatRequest) -> int:
    """How many tokens ``body``'s conversation takes, as a chat would render it."""
    engine, model = loaded(request)
    prompt, _, _ = await _chat_prompt(engine, model, body)
    return len(prompt)
