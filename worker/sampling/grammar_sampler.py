"""A request's grammar, parsed once by llama.cpp into the sampler that constrains its tokens.

llama-cpp-python's ``LlamaGrammar`` only keeps the GBNF text; the one parsed form is llama.cpp's
grammar sampler (``llama_sampler_init_grammar``). It is made as the request is queued, so a
grammar llama.cpp rejects is a 400 before any stream starts, and that same sampler then joins
the request's sampler chain, which owns and frees it from there.

A lazy grammar (tool calls, docs/tool-calls.md) waits for one of its trigger patterns in the
output and constrains the text from that match on; until then the sampler lets every token by.

Made on the engine thread only, against the vocabulary loaded at that moment: the sampler keeps
a pointer to it, and a model put to sleep frees its vocabulary.
"""

from __future__ import annotations

import ctypes
from typing import Any

from worker.host.llama_bindings import llama_cpp

__all__ = ["GrammarSampler", "InvalidGrammar"]


class InvalidGrammar(ValueError):
    """llama.cpp cannot parse the request's GBNF."""


class GrammarSampler:
    """One parsed grammar (``llama_sampler *``), owned until :meth:`hand_over` or :meth:`free`."""

    def __init__(
        self, vocab: llama_cpp.llama_vocab_p, gbnf: str, triggers: tuple[str, ...] = ()
    ) -> None:
        if triggers:
            patterns = (ctypes.c_char_p * len(triggers))(*(t.encode() for t in triggers))
            pointer = llama_cpp.llama_sampler_init_grammar_lazy_patterns(
                vocab, gbnf.encode(), b"root", patterns, len(triggers), None, 0
            )
        else:
            pointer = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode(), b"root")
        if not pointer:  # llama.cpp has logged where the parse failed
            raise InvalidGrammar("the grammar does not parse")
        self._pointer: Any = pointer

    def hand_over(self) -> Any:
        """The sampler, for a chain that takes ownership of it; it can be handed over once."""
        pointer, self._pointer = self._pointer, None
        if pointer is None:
            raise RuntimeError("this grammar sampler was already handed over or freed")
        return pointer

    def free(self) -> None:
        """Free the sampler if no chain took it (the request left before it was admitted)."""
        if self._pointer is not None:
            llama_cpp.llama_sampler_free(self._pointer)
            self._pointer = None
