"""One sequence's sampler, built and run as llama.cpp's common sampler (common/sampling.cpp).

:class:`Sampler` is ``common_sampler`` through llama.cpp's C API: a chain of llama.cpp's own
samplers (logit bias, then the request's ``samplers`` in their order, then the seeded draw; or
temperature and Mirostat), with the grammar and the reasoning budget kept beside the chain as
upstream keeps them. So a fixed seed draws llama-server's tokens:

- the prompt's tokens are accepted into the chain before the first draw (the penalties and DRY
  see them), generated tokens into the grammar and the budget too (``common_sampler_accept``);
- the chain samples first and the grammar only checks the drawn token; a token the grammar
  refuses is drawn again from the grammar-constrained candidates (``common_sampler_sample``).

The candidates are one array over the vocabulary per sequence, refilled from the logits for
each draw and kept afterwards: ``post_sampling_probs`` reads the distribution the chain drew
from (:mod:`worker.sampling.token_probs`). Only the engine thread uses a sampler.
"""

from __future__ import annotations

import array
import ctypes
import math
from typing import Any

from worker.host.llama_bindings import llama_cpp
from worker.sampling.grammar_sampler import GrammarSampler
from worker.sampling.params import SamplingParams
from worker.sampling.reasoning_budget import reasoning_budget_sampler

__all__ = ["Candidates", "Sampler"]

_FIELDS = 3  # llama_token_data: int32 id, float logit, float p


class Candidates:
    """A ``llama_token_data_array`` over the whole vocabulary, filled from one row of logits.

    Filled without numpy (a worker loads it only when it must, docs/benchmarks.md): the ids and
    zero probabilities are copied from a template, the logits into every third float.
    """

    def __init__(self, n_vocab: int) -> None:
        self._n_vocab = n_vocab
        kind = llama_cpp.llama_token_data * n_vocab
        self._template = kind()
        ids = memoryview(self._template).cast("B").cast("i")
        ids[0::_FIELDS] = memoryview(array.array("i", range(n_vocab))).cast("B").cast("i")
        self._data = kind()
        self._floats = memoryview(self._data).cast("B").cast("f")
        self._pointer: Any = ctypes.cast(self._data, llama_cpp.llama_token_data_p)
        self.array = llama_cpp.llama_token_data_array(
            data=self._pointer,
            size=n_vocab,
            selected=-1,
            sorted=False,
        )
        self.pointer = ctypes.pointer(self.array)

    def fill(self, ctx: Any, index: int) -> None:
        """Every token with its logit at batch position ``index``, unsorted, nothing chosen."""
        ctypes.memmove(self._data, self._template, ctypes.sizeof(self._data))
        logits = llama_cpp.llama_get_logits_ith(ctx, index)
        row = (ctypes.c_float * self._n_vocab).from_address(ctypes.addressof(logits.contents))
        self._floats[1::_FIELDS] = memoryview(row).cast("B").cast("f")
        self.array.data = self._pointer  # a sampler may have pointed it elsewhere
        self.array.size = self._n_vocab
        self.array.selected = -1
        self.array.sorted = False

    def selected(self) -> tuple[int, float]:
        """The chosen token and its probability after the last sampler ran."""
        chosen: Any = self.array.data[self.array.selected]
        return chosen.id, chosen.p

    def probability(self, token: int) -> float:
        """``token``'s probability, while the candidates are still in vocabulary order."""
        return float(self.array.data[token].p)

    def best(self, n: int) -> list[tuple[int, float]]:
        """The ``n`` likeliest candidates, best first (sorted in place, as upstream sorts)."""
        if n <= 0 or self.array.size == 0:
            return []
        top_k = llama_cpp.llama_sampler_init_top_k(n)
        try:  # logits order the candidates as their probabilities do, after any sampler
            llama_cpp.llama_sampler_apply(top_k, self.pointer)
        finally:
            llama_cpp.llama_sampler_free(top_k)
        data: Any = self.array.data
        return [(data[i].id, data[i].p) for i in range(self.array.size)]


def _seed(seed: int) -> int:
    # A uint32 as upstream reads it: -1 is LLAMA_DEFAULT_SEED, a fresh random seed.
    return seed & 0xFFFFFFFF


def _logit_bias(params: SamplingParams, vocab: Any, n_vocab: int) -> Any | None:
    # The request's biases, then the model's suppressed tokens at -inf, as upstream merges them.
    biases = list(params.logit_bias.items())
    count = ctypes.c_int32(0)
    suppressed = llama_cpp.llama_vocab_get_suppress_tokens(vocab, ctypes.byref(count))
    biases += [(suppressed[i], -math.inf) for i in range(count.value)]
    if not biases:
        return None
    entries = (llama_cpp.llama_logit_bias * len(biases))(
        *(llama_cpp.llama_logit_bias(token, bias) for token, bias in biases)
    )
    return llama_cpp.llama_sampler_init_logit_bias(n_vocab, len(biases), entries)


def _one_sampler(name: str, p: SamplingParams, vocab: Any, n_vocab: int) -> Any:
    """The llama.cpp sampler a ``samplers`` entry names, with upstream's parameters."""
    if name == "dry":
        breakers = (ctypes.c_char_p * len(p.dry_sequence_breakers))(
            *(breaker.encode() for breaker in p.dry_sequence_breakers)
        )
        return llama_cpp.llama_sampler_init_dry(
            vocab,
            p.dry_multiplier,
            p.dry_base,
            p.dry_allowed_length,
            p.dry_penalty_last_n,
            breakers,
            len(p.dry_sequence_breakers),
        )
    if name == "top_k":
        return llama_cpp.llama_sampler_init_top_k(p.top_k)
    if name == "top_p":
        return llama_cpp.llama_sampler_init_top_p(p.top_p, p.min_keep)
    if name == "top_n_sigma":
        return llama_cpp.llama_sampler_init_top_n_sigma(p.top_n_sigma)
    if name == "min_p":
        return llama_cpp.llama_sampler_init_min_p(p.min_p, p.min_keep)
    if name == "xtc":
        return llama_cpp.llama_sampler_init_xtc(
            p.xtc_probability, p.xtc_threshold, p.min_keep, _seed(p.seed)
        )
    if name == "typ_p":
        return llama_cpp.llama_sampler_init_typical(p.typical_p, p.min_keep)
    if name == "temperature":
        return llama_cpp.llama_sampler_init_temp_ext(
            p.temperature, p.dynatemp_range, p.dynatemp_exponent
        )
    if name == "infill":
        return llama_cpp.llama_sampler_init_infill(vocab)
    if name == "penalties":
        return llama_cpp.llama_sampler_init_penalties(
            n_vocab, p.repeat_last_n, p.repeat_penalty, p.frequency_penalty, p.presence_penalty
        )
    raise ValueError(f"unknown sampler {name!r}")


def _chain(params: SamplingParams, vocab: Any, n_vocab: int) -> Any:
    """``common_sampler_init``'s chain: bias, the samplers in order, then the draw."""
    chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
    samplers = [bias] if (bias := _logit_bias(params, vocab, n_vocab)) is not None else []
    seed = _seed(params.seed)
    if params.mirostat == 1:
        samplers.append(llama_cpp.llama_sampler_init_temp(params.temperature))
        samplers.append(
            llama_cpp.llama_sampler_init_mirostat(
                n_vocab, seed, params.mirostat_tau, params.mirostat_eta, 100
            )
        )
    elif params.mirostat == 2:
        samplers.append(llama_cpp.llama_sampler_init_temp(params.temperature))
        samplers.append(
            llama_cpp.llama_sampler_init_mirostat_v2(seed, params.mirostat_tau, params.mirostat_eta)
        )
    else:
        # adaptive-p draws the token itself, so it goes last, in the draw's place.
        chosen = [name for name in params.samplers if name != "adaptive_p"]
        samplers += [_one_sampler(name, params, vocab, n_vocab) for name in chosen]
        if "adaptive_p" in params.samplers:
            samplers.append(
                llama_cpp.llama_sampler_init_adaptive_p(
                    params.adaptive_target, params.adaptive_decay, seed
                )
            )
        else:
            samplers.append(llama_cpp.llama_sampler_init_dist(seed))
    for sampler in samplers:
        llama_cpp.llama_sampler_chain_add(chain, sampler)
    return chain


class Sampler:
    """One sequence's ``common_sampler``: the chain, the grammar and the reasoning budget."""

    def __init__(
        self,
        params: SamplingParams,
        grammar: GrammarSampler | None,
        vocab: Any,
        n_vocab: int,
        candidates: Candidates,
        reports_candidates: bool = False,
    ) -> None:
        """``grammar`` is the request's already parsed grammar, which this sampler takes over;
        ``candidates`` is the array it draws in (one per slot, reused). ``reports_candidates``
        (``post_sampling_probs``): the candidates are read after each draw, and with a grammar
        they are what the grammar allows, whichever pass drew the token."""
        self.candidates = candidates
        self._reports_candidates = reports_candidates
        self._chain = _chain(params, vocab, n_vocab)
        self._grammar = grammar.hand_over() if grammar is not None else None
        budget = params.reasoning_budget
        self._budget = reasoning_budget_sampler(budget) if budget is not None else None
        # The chain alone, its candidates unread: llama_sampler_sample fills, draws and accepts
        # in C, the same steps without copying the logits through Python for every token.
        self._in_c = self._grammar is None and self._budget is None and not reports_candidates

    def accept_prompt(self, tokens: list[int]) -> None:
        """The prompt's tokens, into the chain only (upstream's ``init_sampler``): repetition
        penalties count them; the grammar and the budget start from the first generated one."""
        chain = self._chain
        for token in tokens:
            if token >= 0:  # media positions hold no token
                llama_cpp.llama_sampler_accept(chain, token)

    def sample(self, ctx: Any, index: int) -> int:
        """Draw the next token from the logits at batch position ``index``."""
        if self._in_c:
            return int(llama_cpp.llama_sampler_sample(self._chain, ctx, index))
        candidates = self.candidates
        candidates.fill(ctx, index)
        if self._budget is not None:
            llama_cpp.llama_sampler_apply(self._budget, candidates.pointer)
        llama_cpp.llama_sampler_apply(self._chain, candidates.pointer)
        token, _ = candidates.selected()
        if self._grammar is None:
            return token
        if self._grammar_allows(token):
            if self._reports_candidates:  # on a copy, which leaves the chain's state alone
                copy = llama_cpp.llama_sampler_clone(self._chain)
                try:
                    self._constrained(ctx, index, copy)
                finally:
                    llama_cpp.llama_sampler_free(copy)
            return token
        # Drawn again, from what the grammar allows (grammar-based rejection sampling).
        self._constrained(ctx, index, self._chain)
        token, _ = self.candidates.selected()
        return token

    def _constrained(self, ctx: Any, index: int, chain: Any) -> None:
        candidates = self.candidates
        candidates.fill(ctx, index)
        if self._budget is not None:
            llama_cpp.llama_sampler_apply(self._budget, candidates.pointer)
        llama_cpp.llama_sampler_apply(self._grammar, candidates.pointer)
        llama_cpp.llama_sampler_apply(chain, candidates.pointer)

    def _grammar_allows(self, token: int) -> bool:
        single = llama_cpp.llama_token_data(token, 1.0, 0.0)
        one = llama_cpp.llama_token_data_array(
            data=ctypes.pointer(single), size=1, selected=-1, sorted=False
        )
        llama_cpp.llama_sampler_apply(self._grammar, ctypes.byref(one))
        return bool(single.logit != -math.inf)

    def accept(self, token: int, generated: bool = True) -> None:
        """``token`` is the sequence's next one (``common_sampler_accept``); a guess kept without
        being drawn (synthetic speculative acceptance) is not ``generated``. Drawn in C, the
        chain has taken the drawn token already (a kept synthetic guess then counts as it)."""
        if generated and self._budget is not None:
            llama_cpp.llama_sampler_accept(self._budget, token)
        if generated and self._grammar is not None:
            llama_cpp.llama_sampler_accept(self._grammar, token)
        if not self._in_c:
            llama_cpp.llama_sampler_accept(self._chain, token)

    def free(self) -> None:
        for pointer in (self._chain, self._grammar, self._budget):
            if pointer is not None:
                llama_cpp.llama_sampler_free(pointer)
        self._chain = self._grammar = self._budget = None
