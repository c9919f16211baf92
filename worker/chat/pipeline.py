"""The one chat pipeline: a :class:`~worker.chat.request.ChatRequest` in, an answer out.

OpenAI's chat completions use it as is; Anthropic's messages and OpenAI's responses translate
their requests into a ``ChatRequest`` at their edge and bring a :class:`ResponseShape` of their
own, so templates, tools, reasoning, grammars and budgets behave the same on every chat-shaped
API: each shape reads the output with the same :class:`~worker.chat.formats.OutputParser`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import msgspec
from litestar.response.base import ASGIResponse

from corral.http.errors import ApiError
from worker.answer.answer_context import AnswerContext
from worker.answer.generation_request import (
    body_grammar,
    prepare_generation,
    token_budget,
    verbose_prompt,
)
from worker.answer.pipeline import PromptJob, answer, completions_per_prompt
from worker.answer.response_shape import ResponseShape
from worker.chat.continuation import continuation, continued_tail
from worker.chat.formats import OutputParser
from worker.chat.media import chat_media_prompt
from worker.chat.output import OutputPlan, plan_output
from worker.chat.request import ChatMessage, ChatRequest
from worker.engine.engine import Engine
from worker.engine.model import LoadedModel
from worker.media.projector import MediaPrompt
from worker.sampling.reasoning_budget import ReasoningBudget
from worker.state import AnyRequest, loaded
from worker.templates import ChatTemplates, TemplateRenderError

__all__ = ["ShapeFactory", "count_prompt_tokens", "plan_chat", "run_chat", "template_tools"]

ShapeFactory = Callable[[AnswerContext, OutputParser], ResponseShape]
"""Builds an API's answer shape for one completion, from its context and how to read the
output."""


@dataclass(frozen=True, slots=True)
class _ChatPrompt:
    tokens: list[int]
    plan: OutputPlan  # how the answer is read, its tool grammar
    thinking: ReasoningBudget | None
    media: MediaPrompt | None  # its images or audio, when it has some


def _budget(body: ChatRequest, model: LoadedModel) -> int:
    """The request's thinking budget, else ``--reasoning-budget``; -1 is no budget."""
    asked = max(body.reasoning_budget_tokens, body.thinking_budget_tokens)
    return asked if asked >= 0 else model.settings.reasoning_budget


def template_tools(
    template: ChatTemplates,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    tool_choice: str | dict[str, Any] | None = None,
    parallel_tool_calls: bool = True,
    reasoning_format: str = "auto",
    tool_mode: str = "template",
) -> tuple[OutputPlan, list[dict[str, Any]] | None]:
    """:func:`plan_chat`'s plan and the tools the template itself is given."""
    # A template that describes tools gets them, in the model's own words, as llama-server
    # hands them over (even with tool_choice none), and its tool-call syntax is read back. So
    # does one that only writes tool calls (DeepSeek R1 distills, V3.1, firefunction v2):
    # llama-server's prompt is the template's, without tool instructions, and its autoparser
    # reads the calls the template writes (common/chat.cpp). A template with no tool-call
    # syntax at all is rendered as is and its answer read as text, as llama-server does,
    # unless --tool-mode generic asks for Corral's generic tool mode (docs/tool-calls.md).
    caps = template.caps
    describes = bool(tools) and (caps.supports_tools or caps.supports_tool_calls)
    source = template.source
    if describes and template.tool_use is not None:
        source = template.tool_use.source
    plan = plan_output(
        source,
        messages,
        tools,
        tool_choice,
        parallel_tool_calls,
        reasoning_format,
        native=describes,
        # One that describes tools in a syntax Corral cannot read keeps the generic mode.
        generic=describes or tool_mode == "generic",
    )
    return plan, None if plan.generic else tools


async def plan_chat(
    model: LoadedModel,
    messages: list[ChatMessage],
    tools: list[dict[str, Any]] | None,
    tool_choice: str | dict[str, Any] | None,
    parallel_tool_calls: bool = True,
    reasoning_format: str | None = None,
) -> tuple[OutputPlan, list[dict[str, Any]] | None]:
    """How a conversation is put to the template and its answer read: the plan (its messages
    are what the template renders) and the tools the template itself is given. The chat
    routes and ``/apply-template`` both render through it, so they show the same prompt."""
    plan_call = functools.partial(
        template_tools,
        model.template,
        msgspec.to_builtins(messages),
        tools,
        tool_choice,
        parallel_tool_calls,
        reasoning_format or model.settings.reasoning_format,
        model.settings.tool_mode,
    )
    # Tools' schemas become a grammar there: in a thread, as a request's own schema
    # (docs/security.md, "Media and JSON schemas in workers").
    return await anyio.to_thread.run_sync(plan_call) if tools else plan_call()


async def _chat_prompt(engine: Engine, model: LoadedModel, body: ChatRequest) -> _ChatPrompt:
    """The conversation as prompt tokens, and how its answer is to be read."""
    template = model.template
    plan, tools = await plan_chat(
        model,
        body.messages,
        body.tools,
        body.tool_choice,
        body.parallel_tool_calls,
        body.reasoning_format,
    )
    kwargs = body.chat_template_kwargs
    budget, tags = _budget(body, model), plan.format.thinking
    budget_message = body.reasoning_budget_message
    if budget_message is None:
        budget_message = model.settings.reasoning_budget_message
    mode = continuation(body, prefill_assistant=model.settings.prefill_assistant)
    media = await chat_media_prompt(engine, model, plan.messages, tools, kwargs)

    def render() -> _ChatPrompt:
        if mode is None or media is not None:  # libmtmd renders a media prompt whole
            request = template.request(plan.messages, tools, kwargs, body.add_generation_prompt)
            tokens = media.tokens if media is not None else model.chat_prompt(request)
            tail = template.generation_prompt(request) if tags is not None else ""
        else:
            request = template.request(plan.messages[:-1], tools, kwargs)
            earlier = template.render(dataclasses.replace(request, add_generation_prompt=False))
            gen = template.generation_prompt(request)
            text, tail = continued_tail(gen, plan.messages[-1], mode, tags)
            tokens = model.tokenize(earlier + text, add_special=True)
        if tags is None:
            return _ChatPrompt(tokens, plan, None, media)
        # What the prompt ends with says whether the answer starts inside the thinking.
        read = plan.after_prompt(tail)
        if budget < 0:
            return _ChatPrompt(tokens, read, None, media)
        start, end, message = (
            tuple(model.tokenize(t, add_special=False)) if t else ()
            for t in (tags.start, tags.end, budget_message)
        )
        thinking = ReasoningBudget(budget, start, end, read.whole.thinking_open, message)
        return _ChatPrompt(tokens, read, thinking, media)

    try:
        return await engine.call(render)
    except TemplateRenderError as exc:
        raise ApiError(400, f"cannot apply the chat template: {exc}") from None


async def run_chat(request: AnyRequest, body: ChatRequest, shape: ShapeFactory) -> ASGIResponse:
    """A chat request, answered in the shape ``shape`` builds."""
    engine, model = loaded(request)
    per_prompt = completions_per_prompt(body, len(model.batcher.slots))
    chat = await _chat_prompt(engine, model, body)
    plan = chat.plan
    budget = token_budget(model, body.max_completion_tokens, body.max_tokens, body.n_predict)
    if body.tools and body.tool_choice != "none" and body.grammar is not None:
        # As llama-server, whatever the template (a tool grammar or none): server-common.cpp.
        raise ApiError(400, "tools cannot be combined with grammar, json_schema or response_format")
    grammar = await body_grammar(body)
    make = prepare_generation(
        model,
        body,
        grammar,
        chat.tokens,
        budget,
        plan.grammar,
        plan.triggers,
        chat.thinking,
        chat.media,
    )
    parser = plan.stream if body.stream else plan.whole
    include_usage = body.stream_options is not None and body.stream_options.include_usage
    context = AnswerContext(model.settings.alias, include_usage=include_usage)
    rendered = await verbose_prompt(engine, model, body, grammar, chat.tokens, budget)
    job = PromptJob(make, len(chat.tokens), rendered)
    return await answer(
        request, engine, context, lambda c: shape(c, parser), [job], per_prompt, body.stream
    )


async def count_prompt_tokens(request: AnyRequest, body: ChatRequest) -> int:
    """How many tokens ``body``'s conversation takes, as a chat would render it."""
    engine, model = loaded(request)
    return len((await _chat_prompt(engine, model, body)).tokens)
