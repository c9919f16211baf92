"""The one protocol every model family's tool-call syntax implements (docs/tool-calls.md,
"Adding a family").

The output plan (:mod:`worker.chat.output`) knows a family only through it: how the answer is
parsed (whole or streamed), the grammar that holds the calls to the request's tools (lazy, with
the family's triggers, or eager), what the syntax learns from the request's tools, and whether
it splits the thinking off itself. The data families (:mod:`families`) get it from the two
generic implementations, :class:`~worker.chat.formats.json_calls.JsonToolSyntax` and
:class:`~worker.chat.formats.xml_calls.XmlToolSyntax`; a family with a shape of its own
(:mod:`own_shape`: ``harmony``, ``gemma4``, …) implements it in its module.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from worker.chat.formats.gbnf import ToolGrammar
from worker.chat.formats.message import ParsedMessage
from worker.chat.formats.reasoning import ThinkingTags

__all__ = ["NativeSyntax"]


class NativeSyntax(ABC):
    """A model family's own tool-call syntax, as its chat template's detection row names it."""

    __slots__ = ()  # the families are slotted dataclasses

    # The syntax frames every answer (gpt-oss's channels, Muse's and Functionary v3.2's
    # recipients), so it is read whether or not the request has tools.
    frames_answer: ClassVar[bool] = False

    @abstractmethod
    def parse(self, text: str, partial: bool) -> ParsedMessage:
        """Content and tool calls in ``text`` (after any thinking tags); ``partial``: ``text``
        is a stream's prefix, and nothing that may still change is given. Raises
        :class:`~worker.chat.formats.scanning.MalformedToolCall` when the model opened a call it
        did not write out correctly."""

    @abstractmethod
    def grammar(
        self,
        tools: list[dict[str, Any]],
        *,
        lazy: bool,
        parallel: bool,
        thinking: ThinkingTags | None = None,
    ) -> ToolGrammar:
        """The grammar for calling ``tools`` (OpenAI tool objects) in this syntax.

        ``lazy`` (``tool_choice: auto``): it waits for the family's triggers; otherwise it
        holds from the first token. ``parallel``: several calls may follow one another.
        ``thinking``: the template's thinking tags, which an eager grammar lets come first;
        a family whose grammar writes the whole answer's shape has its own thinking rule.
        """

    def with_tools(self, tools: list[dict[str, Any]]) -> NativeSyntax:
        """The syntax told the request's tools, when its parsing depends on them (which
        parameters are strings, which tools are built in); most do not."""
        return self

    def with_reasoning(self, split: bool) -> NativeSyntax:
        """The syntax with the thinking it frames itself split off as reasoning (``split``) or
        left in the content (``reasoning_format: none``); thinking tags are split apart from
        the syntax (:mod:`reasoning`), so most syntaxes have nothing to do."""
        return self
