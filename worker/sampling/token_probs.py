"""The probabilities behind a sampled token: llama-server's ``n_probs`` and OpenAI's logprobs.

Without ``post_sampling_probs`` they are the model's own distribution at that position (the
softmax of the raw logits), reported as log probabilities; with it, the candidates the sequence's
sampler chain drew from (:class:`~worker.sampling.chain.Candidates`: after logit bias, penalties,
the grammar and every sampler), reported as probabilities, without the tokens the chain removed,
as upstream leaves out zero-probability tokens. Both are read by llama.cpp's samplers, in C.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from worker.host.llama_bindings import llama_cpp
from worker.sampling.chain import Candidates
from worker.sampling.text import token_piece

__all__ = ["TokenProb", "TokenProbs", "log_prob", "token_probs"]


class TokenProb(NamedTuple):
    token: int
    prob: float
    piece: bytes  # the token's text, which may be part of a UTF-8 sequence


class TokenProbs(NamedTuple):
    """The sampled token's probability and the ``n`` likeliest tokens', best first."""

    post_sampling: bool
    chosen: TokenProb
    top: tuple[TokenProb, ...]


def log_prob(prob: TokenProb) -> float:
    """Its log probability; llama-server writes a zero probability's as -9999, not -inf,
    which JSON cannot carry."""
    return math.log(prob.prob) if prob.prob > 0 else -9999.0


def _model_distribution(candidates: Candidates, ctx: Any, index: int) -> None:
    """The candidates with the softmax of the raw logits, in vocabulary order; a draw of its
    own (a throwaway seed) computes it, the sequence's chain is left alone."""
    candidates.fill(ctx, index)
    softmax = llama_cpp.llama_sampler_init_dist(0)
    try:
        llama_cpp.llama_sampler_apply(softmax, candidates.pointer)
    finally:
        llama_cpp.llama_sampler_free(softmax)


def token_probs(
    candidates: Candidates, ctx: Any, vocab: Any, index: int, token: int, n: int, post: bool
) -> TokenProbs:
    """``token``'s probability and the top ``n`` (engine thread). With ``post`` the candidates
    still hold the draw that chose ``token``; without, they are refilled from the logits at
    batch position ``index``."""
    if post:
        chosen_id, chosen = candidates.selected()
        if chosen_id != token:  # a speculative guess kept without being drawn
            chosen = next((p for t, p in candidates.best(candidates.array.size) if t == token), 0.0)
        best = [(t, p) for t, p in candidates.best(n) if p > 0.0]
    else:
        _model_distribution(candidates, ctx, index)
        chosen = candidates.probability(token)
        best = candidates.best(n)
    top = tuple(TokenProb(t, p, token_piece(vocab, t)) for t, p in best)
    return TokenProbs(post, TokenProb(token, chosen, token_piece(vocab, token)), top)
