"""How a chat request's answer will be read: native tool calls, generic JSON tools, thinking.

The model's chat template says which format it speaks (:func:`~worker.chat.formats.detect_format`).
A template with a tool-call syntax of its own gets it parsed back out of the output, under a
lazy grammar that keeps the calls well formed; a template without one gets Corral's generic
JSON tool mode (:mod:`worker.chat.json_tools`). Thinking is split off as ``reasoning_content`` per
``--reasoning-format`` or the request's ``reasoning_format`` (docs/tool-calls.md).
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
    ParsedMessage,
    ThinkingTags,
    ToolCall,
    ToolSyntax,
    detect_format,
    tool_grammar,
)
from worker.chat.formats.family_grammars import family_grammar
from worker.chat.formats.harmony import HarmonySyntax
from worker.chat.formats.json_calls import JsonToolSyntax
from worker.chat.formats.muse import MuseSyntax
from worker.chat.formats.python_tag import PythonTagSyntax
from worker.chat.formats.recipients import RecipientSyntax
from worker.chat.formats.xml_calls import XmlToolSyntax
from worker.chat.json_tools import ToolPlan, chosen_tools, plan_tools
from worker.sampling.grammars import GrammarError

__all__ = ["OutputPlan", "plan_output"]


@dataclass(frozen=True, slots=True)
class _GenericSyntax:
    """The generic JSON tool mode read as a tool syntax: only a finished answer says anything."""

    plan: ToolPlan

    def parse(self, text: str, partial: bool) -> ParsedMessage:
        if partial:
            return ParsedMessage()
        answer = self.plan.parse(text)
        calls = [
            ToolCall(c["function"]["name"], c["function"]["arguments"], c["id"])
            for c in answer.tool_calls
        ]
        return ParsedMessage(content=answer.content or "", tool_calls=calls)


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
        if isinstance(native, JsonToolSyntax | XmlToolSyntax | PythonTagSyntax):
            built = tool_grammar(
                native, chosen, lazy=not required, parallel=parallel, thinking=thinking
            )
        else:
            built = family_grammar(native, chosen, lazy=not required, parallel=parallel)
    except Exception as exc:  # the schema converter raises bare exceptions
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
) -> OutputPlan:
    """How to prompt for and read the answer; :class:`ApiError` 400 for bad tools or formats.

    ``native``: the template describes the tools itself, so the model may call them in its own
    syntax, when Corral knows it; otherwise the generic JSON tool mode describes them.
    """
    if reasoning_format not in REASONING_FORMATS:
        raise ApiError(400, f"reasoning_format must be one of {', '.join(REASONING_FORMATS)}")
    chat_format = detect_format(template_source)
    legacy = reasoning_format == "deepseek-legacy"
    thinking = chat_format.thinking if reasoning_format != "none" else None
    syntax: ToolSyntax | None = None
    # These frame every answer, so they are read with or without tools.
    if isinstance(chat_format.tools, HarmonySyntax):
        syntax = HarmonySyntax(split_reasoning=reasoning_format != "none")
    elif isinstance(chat_format.tools, MuseSyntax):
        syntax = MuseSyntax(split_reasoning=reasoning_format != "none")
    elif isinstance(chat_format.tools, RecipientSyntax):
        syntax = chat_format.tools
    grammar: str | None = None
    triggers: tuple[str, ...] = ()
    if tools and tool_choice != "none":
        native_syntax = chat_format.tools if native else None
        try:
            functions, required = chosen_tools(tools, tool_choice)
            plan = plan_tools(tools, tool_choice) if native_syntax is None else None
        except GrammarError as exc:
            raise ApiError(400, str(exc)) from None
        if plan is not None:
            messages, grammar, syntax = plan.prepare(messages), plan.grammar, _GenericSyntax(plan)
        elif native_syntax is not None:
            told = native_syntax
            if isinstance(native_syntax, XmlToolSyntax | PythonTagSyntax):
                told = native_syntax.with_tools(tools)
            if isinstance(syntax, MuseSyntax):
                syntax = syntax.with_tools(tools)
            syntax = syntax or told  # gpt-oss and Muse Glimmer keep their reasoning split
            grammar, triggers = _native_grammar(
                told, functions, required, parallel_tool_calls, chat_format.thinking
            )
    markers = chat_format.content_markers
    whole = OutputParser(syntax, thinking, reasoning_in_content=legacy, content_markers=markers)
    stream = OutputParser(syntax, None if legacy else thinking, content_markers=markers)
    generic = isinstance(syntax, _GenericSyntax)
    return OutputPlan(chat_format, messages, grammar, triggers, whole, stream, generic)
