"""The probabilities behind a sampled token: llama-server's ``n_probs`` and OpenAI's logprobs.

Read from the logits of the position the token was sampled at. Without ``post_sampling_probs``
they are the model's own distribution (softmax of the raw logits), reported as log
probabilities; with it, the distribution the sampler drew from (after temperature, top-k,
top-p and min-p), reported as probabilities, and tokens those samplers removed are left out,
as upstream leaves out zero-probability tokens.
"""

from __future__ import annotations

import ctypes
import math
from typing import TYPE_CHECKING, Any, NamedTuple

from worker.host.llama_bindings import llama_cpp
from worker.sampling.chain import SamplingParams, token_piece

if (
    TYPE_CHECKING
):  # numpy loads on the first request for probabilities (worker/host/import_fence.py)
    import numpy as np
    import numpy.typing as npt

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


def _softmax(logits: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    import numpy as np

    shifted = np.exp(logits - logits.max())
    result: npt.NDArray[np.float64] = shifted / shifted.sum()
    return result


def _sampled_distribution(
    logits: npt.NDArray[np.float64], params: SamplingParams
) -> npt.NDArray[np.float64]:
    """What the chain draws from: top-k, top-p and min-p cut tokens, temperature sharpens."""
    import numpy as np

    if params.temperature <= 0:
        greedy = np.zeros_like(logits)
        greedy[int(np.argmax(logits))] = 1.0
        return greedy
    keep = np.ones(len(logits), dtype=bool)
    if 0 < params.top_k < len(logits):
        keep[np.argsort(logits)[: len(logits) - params.top_k]] = False
    probs = _softmax(np.where(keep, logits, -np.inf))
    if params.top_p < 1.0:
        order = np.argsort(-probs)
        before = np.cumsum(probs[order]) - probs[order]
        keep[order[before >= params.top_p]] = False
    if params.min_p > 0.0:
        keep &= probs >= params.min_p * probs.max()
    return _softmax(np.where(keep, logits, -np.inf) / params.temperature)


def token_probs(
    ctx: Any,
    vocab: Any,
    index: int,
    token: int,
    n: int,
    params: SamplingParams,
    post: bool,
) -> TokenProbs:
    """``token``'s probability and the top ``n`` at batch position ``index`` (engine thread)."""
    import numpy as np

    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
    pointer = llama_cpp.llama_get_logits_ith(ctx, index)
    raw = np.ctypeslib.as_array(ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), (n_vocab,))
    logits = raw.astype(np.float64)
    probs = _sampled_distribution(logits, params) if post else _softmax(logits)
    order = np.argsort(-probs)[:n]
    top = tuple(
        TokenProb(int(t), float(probs[t]), token_piece(vocab, int(t)))
        for t in order
        if not post or probs[t] > 0.0
    )
    return TokenProbs(post, TokenProb(token, float(probs[token]), token_piece(vocab, token)), top)
