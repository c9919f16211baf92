"""A request's grammar is parsed once by llama.cpp and that parse is what samples (real vocab)."""

from __future__ import annotations

from typing import Any

import llama_cpp
import pytest

from worker.sampling.chain import Candidates, Sampler
from worker.sampling.grammar_sampler import GrammarSampler, InvalidGrammar
from worker.sampling.params import SamplingParams


def test_a_grammar_llama_cpp_cannot_parse_is_invalid(vocab: Any) -> None:
    with pytest.raises(InvalidGrammar, match="does not parse"):
        GrammarSampler(vocab, "root ::= nonsense (")


def test_the_sampler_takes_the_parsed_grammar_over(vocab: Any) -> None:
    grammar = GrammarSampler(vocab, 'root ::= "a"+')
    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
    sampler = Sampler(SamplingParams(), grammar, vocab, n_vocab, Candidates(n_vocab))
    # The sampler owns the one parse now: it frees it, and it cannot be handed over again.
    with pytest.raises(RuntimeError, match="already handed over"):
        grammar.hand_over()
    sampler.free()
    grammar.free()  # nothing left to free here


def test_a_grammar_is_handed_over_once(vocab: Any) -> None:
    grammar = GrammarSampler(vocab, 'root ::= "a"')
    llama_cpp.llama_sampler_free(grammar.hand_over())
    with pytest.raises(RuntimeError, match="already handed over"):
        grammar.hand_over()


def test_a_grammar_never_handed_over_is_freed_once(vocab: Any) -> None:
    grammar = GrammarSampler(vocab, 'root ::= "a"')
    grammar.free()
    grammar.free()
    with pytest.raises(RuntimeError):
        grammar.hand_over()
