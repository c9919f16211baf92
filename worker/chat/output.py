"""How a chat request's answer will be read: native tool calls, generic JSON tools, thinking.

The model's chat template says which format it speaks (:func:`~worker.chat.formats.detect_format`).
A template with a tool-call syntax of its own gets it parsed back out of the output, under a
lazy grammar that keeps the calls well formed; a template without one is answered as text, as
llama-server answers it, unless ``--tool-mode generic`` gives it Corral's generic JSON tool mode
(:mod:`worker.chat.json_tools`). Thinking is split off as ``reasoning_content`` per
``--reasoning-format`` or the request's ``reasoning_format`` (docs/tool-calls.md). A family is
known here only through :class:`~worker.chat.formats.NativeSyntax`, whatever its shape.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from corral.http.errors import ApiError
from worker.chat.formats import (
    REASONING_FORMATS,
    ChatFormat,
    NativeSyntax,
    OutputParser,
    ThinkingTags,
    ToolSyntax,
    detect_format,
)
from worker.chat.json_tools import chosen_tools, plan_tools
from worker.sampling.grammars import GrammarError

__all__ = ["OutputPlan", "plan_output"]


@dataclass(frozen=True, slots=True)
class OutputPlan:
    format: ChatFormat
    messages: list[dict[str, Any]]  # the conversation as the template is to see it
    grammar: str | None  # GBNF for the tool calls
    triggers: tuple[str, ...]  # a lazy grammar's trigger patterns
    whole: OutputParser  # reads a whole answer
    stream: OutputParser  # reads a streamed one (deepseek-legacy differs)
    generic: bool = False  # the generic JSON tool mode: ``messages`` describe the tools

    def after_prompt(self, prompt_tail: str) -> OutputPlan:
        """The plan once the prompt is known: one that opens the thinking starts inside it."""
        tags = self.format.thinking
        if tags is None or not prompt_tail.rstrip().endswith(tags.start):
            return self
        return replace(
            self,
            whole=replace(self.whole, thinking_open=True),
            stream=replace(self.stream, thinking_open=True),
        )


def _native_grammar(
    native: NativeSyntax,
    functions: dict[str, dict[str, Any]],
    required: bool,
    parallel: bool,
    thinking: ThinkingTags | None,
) -> tuple[str, tuple[str, ...]]:
    chosen = [{"type": "function", "function": f} for f in functions.values()]
    try:
        built = native.grammar(chosen, lazy=not required, parallel=parallel, thinking=thinking)
    except Exception as exc:  # a schema llama.cpp refuses, or tools of another shape
        raise ApiError(400, f"tools cannot be converted to a grammar: {exc}") from None
    return built.gbnf, built.triggers


def plan_output(
    template_source: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    tool_choice: Any,
    parallel_tool_calls: bool,
    reasoning_format: str,
    *,
    native: bool = True,
    generic: bool = True,
) -> OutputPlan:
    """How to prompt for and read the answer; :class:`ApiError` 400 for bad tools or formats.

    ``native``: the template describes the tools itself, so the model may call them in its own
    syntax, when Corral knows it; otherwise the generic JSON tool mode describes them, where
    ``generic`` allows it, else the answer is read as text (the tools still checked).
    """
    if reasoning_format not in REASONING_FORMATS:
        raise ApiError(400, f"reasoning_format must be one of {', '.join(REASONING_FORMATS)}")
    chat_format = detect_format(template_source)
    legacy = reasoning_format == "deepseek-legacy"
    thinking = chat_format.thinking if reasoning_format != "none" else None
    own = chat_format.tools
    if own is not None:
        own = own.with_reasoning(reasoning_format != "none")
    # A syntax that frames every answer (gpt-oss's channels…) is read with or without tools.
    syntax: ToolSyntax | None = own if own is not None and own.frames_answer else None
    grammar: str | None = None
    triggers: tuple[str, ...] = ()
    described = False
    if tools and tool_choice != "none":
        told = own if native else None
        try:
            functions, required = chosen_tools(tools, tool_choice)
            plan = plan_tools(tools, tool_choice) if told is None and generic else None
        except GrammarError as exc:
            raise ApiError(400, str(exc)) from None
        if plan is not None:
            messages, grammar, syntax = plan.prepare(messages), plan.grammar, plan
            described = True
        elif told is not None:
            syntax = told = told.with_tools(tools)
            grammar, triggers = _native_grammar(
                told, functions, required, parallel_tool_calls, chat_format.thinking
            )
    markers = chat_format.content_markers
    whole = OutputParser(syntax, thinking, reasoning_in_content=legacy, content_markers=markers)
    stream = OutputParser(syntax, None if legacy else thinking, content_markers=markers)
    return OutputPlan(chat_format, messages, grammar, triggers, whole, stream, described)
