"""A request's grammar is parsed once by llama.cpp and that parse is what samples (real vocab)."""

from __future__ import annotations

import ctypes
from typing import Any

import llama_cpp
import pytest

from worker.sampling.chain import SamplingParams, build_sampler
from worker.sampling.grammar_sampler import GrammarSampler, InvalidGrammar


def _address(pointer: Any) -> int | None:
    address: int | None = ctypes.cast(pointer, ctypes.c_void_p).value
    return address


def test_a_grammar_llama_cpp_cannot_parse_is_invalid(vocab: Any) -> None:
    with pytest.raises(InvalidGrammar, match="does not parse"):
        GrammarSampler(vocab, "root ::= nonsense (")


def test_the_parsed_grammar_is_the_one_in_the_sampler_chain(vocab: Any) -> None:
    grammar = GrammarSampler(vocab, 'root ::= "a"+')
    pointer = grammar._pointer
    chain = build_sampler(SamplingParams(temperature=0), grammar, n_vocab=0)
    try:
        # No logit bias: the grammar is the chain's first sampler, the very object parsed above.
        assert _address(llama_cpp.llama_sampler_chain_get(chain, 0)) == _address(pointer)
        assert llama_cpp.llama_sampler_chain_n(chain) == 2  # the grammar, then greedy
    finally:
        llama_cpp.llama_sampler_free(chain)
    grammar.free()  # the chain owned it: nothing left to free here


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
