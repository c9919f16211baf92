"""The grammar around the data families' tool calls, lazily (docs/tool-calls.md).

As llama-server does, the grammar only takes hold once the output reaches the format's trigger
(``<tool_call>``, ``[TOOL_CALLS]``…), so with ``tool_choice: auto`` the model may still answer in
text; ``required`` and a named choice constrain the output from its first token. From the
trigger on, only the request's tools with arguments matching their JSON Schemas can follow.
Each data syntax (:mod:`json_calls`, :mod:`xml_calls`) writes its calls' rules; this is the
section they share: its opening and closing markers, the calls in a row, the thinking first.
"""

from __future__ import annotations

from dataclasses import dataclass

from worker.chat.formats.gbnf import ToolGrammar, choice, literal, text_without
from worker.chat.formats.reasoning import ThinkingTags

__all__ = ["ToolSection"]


@dataclass(frozen=True, slots=True)
class ToolSection:
    """Where a data family's tool calls sit in the answer."""

    opening: str  # literal before the calls (the trigger, when the section consumes it)
    closing: str  # literal after them
    array: bool  # the calls are a JSON array: ``[`` … ``, `` … ``]``
    triggers: tuple[str, ...]  # the patterns that start the lazy grammar

    def grammar(
        self,
        rules: str,
        calls: list[str],
        *,
        lazy: bool,
        parallel: bool,
        thinking: ThinkingTags | None,
    ) -> ToolGrammar:
        """The grammar of the section holding ``calls`` (GBNF sequences using ``rules``).

        An eager grammar for a thinking model lets it think first, as llama.cpp's does: the
        start tag is optional since a prompt may already have opened the thinking. The thoughts
        may be any text that does not begin the end tag's first two characters (a grammar
        cannot say "anything but this string" more exactly without many rules).
        """
        opening, closing, separator = self.opening, self.closing, '"\\n"?'
        if self.array:
            opening, closing, separator = f"{opening}[", f"]{closing}", '", "'
        repeat = f" ({separator} tool-call)*" if parallel else ""
        # Models put a newline inside a section's markers (MiniMax, DeepSeek): let them.
        head = f"{literal(opening)} [ \\t\\n]* " if opening else ""
        tail = f" [ \\t\\n]* {literal(closing)}" if closing else ""
        think = ""
        if thinking is not None and not lazy:
            think = f"({literal(thinking.start)}? thought {literal(thinking.end)} [ \\t\\n]*)? "
            rules += f"\nthought ::= {text_without(thinking.end)}"
        root = f"root ::= {think}{head}tool-call{repeat}{tail}"
        gbnf = "\n".join((rules, f"tool-call ::= {choice(calls)}", root))
        return ToolGrammar(gbnf, self.triggers if lazy else ())
