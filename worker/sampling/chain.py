"""Per-sequence sampling and text assembly for the batched engine.

Each sequence owns one llama.cpp sampler chain (grammar samplers are stateful, so chains are
never shared). Text is assembled from token pieces with an incremental UTF-8 decoder, and a
:class:`StopMatcher` holds back any tail that could still become a stop string, so a stop string
never reaches a client partially.
"""

from __future__ import annotations

import codecs
import ctypes
from dataclasses import dataclass, field
from typing import Any

from worker.host.llama_bindings import llama_cpp
from worker.sampling.grammar_sampler import GrammarSampler
from worker.sampling.reasoning_budget import ReasoningBudget, reasoning_budget_sampler

__all__ = ["SamplingParams", "StopMatcher", "TextAssembler", "build_sampler", "token_piece"]


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """llama-server's sampling fields, already validated; defaults are llama-server's."""

    temperature: float = 0.8
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    typical_p: float = 1.0
    repeat_penalty: float = 1.0
    repeat_last_n: int = 64
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    seed: int = -1
    logit_bias: dict[int, float] = field(default_factory=dict)
    text_bias: tuple[tuple[str, float], ...] = ()  # by text, tokenized as the request is queued
    grammar: str | None = None  # GBNF, from `grammar`, `json_schema` or `response_format`
    grammar_triggers: tuple[str, ...] = ()  # patterns a lazy (tool-call) grammar waits for
    reasoning_budget: ReasoningBudget | None = None  # --reasoning-budget, as tokens to watch


def build_sampler(params: SamplingParams, grammar: GrammarSampler | None, n_vocab: int) -> Any:
    """A new sampler chain (``llama_sampler *``); free it with ``llama_sampler_free``.

    ``grammar`` is the request's already parsed grammar, which the chain takes over.
    """
    chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())

    def add(sampler: Any) -> None:
        llama_cpp.llama_sampler_chain_add(chain, sampler)

    if params.logit_bias:
        biases = (llama_cpp.llama_logit_bias * len(params.logit_bias))(
            *(llama_cpp.llama_logit_bias(token, bias) for token, bias in params.logit_bias.items())
        )
        add(llama_cpp.llama_sampler_init_logit_bias(n_vocab, len(params.logit_bias), biases))
    if params.reasoning_budget is not None:  # before the grammar, as llama.cpp applies it
        add(reasoning_budget_sampler(params.reasoning_budget))
    if grammar is not None:
        add(grammar.hand_over())
    if (params.repeat_penalty, params.frequency_penalty, params.presence_penalty) != (1, 0, 0):
        add(
            llama_cpp.llama_sampler_init_penalties(
                n_vocab,
                params.repeat_last_n,
                params.repeat_penalty,
                params.frequency_penalty,
                params.presence_penalty,
            )
        )
    if params.temperature <= 0:
        add(llama_cpp.llama_sampler_init_greedy())
        return chain
    # llama-server's order: top-k, typical, top-p, min-p, temperature, then the draw.
    add(llama_cpp.llama_sampler_init_top_k(params.top_k))
    add(llama_cpp.llama_sampler_init_typical(params.typical_p, 1))
    add(llama_cpp.llama_sampler_init_top_p(params.top_p, 1))
    add(llama_cpp.llama_sampler_init_min_p(params.min_p, 1))
    add(llama_cpp.llama_sampler_init_temp(params.temperature))
    seed = params.seed if params.seed >= 0 else llama_cpp.LLAMA_DEFAULT_SEED
    add(llama_cpp.llama_sampler_init_dist(seed))
    return chain


_PIECE_BUFFER = 256


def token_piece(vocab: llama_cpp.llama_vocab_p, token: int, special: bool = False) -> bytes:
    # llama-cpp-python's LlamaModel.token_to_piece returns its whole buffer, NULs included.
    buffer = ctypes.create_string_buffer(_PIECE_BUFFER)
    n = llama_cpp.llama_token_to_piece(vocab, token, buffer, _PIECE_BUFFER, 0, special)
    if n < 0:  # the piece is longer than the buffer: ask again with the size it needs
        buffer = ctypes.create_string_buffer(-n)
        n = llama_cpp.llama_token_to_piece(vocab, token, buffer, -n, 0, special)
    return buffer.raw[:n]


class TextAssembler:
    """Token pieces in, complete UTF-8 text out (a character split over tokens waits)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, piece: bytes) -> str:
        return self._decoder.decode(piece)

    def finish(self) -> str:
        return self._decoder.decode(b"", final=True)


class StopMatcher:
    """Finds stop strings in generated text without ever releasing part of one."""

    def __init__(self, stops: list[str]) -> None:
        self._stops = [stop for stop in stops if stop]
        self._held = ""
        self.matched: str | None = None

    def feed(self, text: str) -> str:
        """Text that is safe to send now; sets :attr:`matched` when a stop string appears."""
        if not self._stops:
            return text
        pending = self._held + text
        hits = [(pending.find(stop), stop) for stop in self._stops if stop in pending]
        if hits:
            index, self.matched = min(hits)
            self._held = ""
            return pending[:index]
        keep = max((self._overlap(pending, stop) for stop in self._stops), default=0)
        self._held = pending[len(pending) - keep :] if keep else ""
        return pending[: len(pending) - keep]

    def flush(self) -> str:
        """At the end of generation, whatever was held back was not a stop string after all."""
        held, self._held = self._held, ""
        return held

    @staticmethod
    def _overlap(text: str, stop: str) -> int:
        # Longest suffix of `text` that is a proper prefix of `stop`.
        for size in range(min(len(text), len(stop) - 1), 0, -1):
            if text.endswith(stop[:size]):
                return size
        return 0
