"""A request's ``logit_bias`` as llama-server reads it (``server-schema.cpp``).

Either ``[[token, bias], ...]`` or OpenAI's ``{"token": bias}``. A token is an id or a string;
a string biases every token it tokenizes to (without BOS), so ``{" the": -100}`` bans the word
whatever its id. A bias of ``false`` bans the token. Ids outside the vocabulary are a 400 here,
where llama-server drops them silently: a typo should not pass for a bias that works.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from worker.host.errors import InvalidInput
from worker.host.llama_bindings import llama_cpp
from worker.sampling.params import SamplingParams

__all__ = ["parse_logit_bias", "with_text_bias"]


def _bias(value: Any) -> float | None:
    if value is False:
        return -math.inf
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None  # llama-server skips what it cannot read as a bias


def parse_logit_bias(
    raw: dict[str, Any] | list[Any] | None, n_vocab: int
) -> tuple[dict[int, float], tuple[tuple[str, float], ...]]:
    """Biases by token id, and by text: text is tokenized on the engine thread
    (:func:`with_text_bias`), where the vocabulary is known to be loaded."""
    pairs: list[tuple[Any, Any]]
    if isinstance(raw, dict):
        pairs = [(int(key) if key.lstrip("-").isdigit() else key, v) for key, v in raw.items()]
    else:
        pairs = [tuple(item) for item in raw or () if isinstance(item, list) and len(item) == 2]
    biases: dict[int, float] = {}
    by_text: list[tuple[str, float]] = []
    for token, value in pairs:
        bias = _bias(value)
        if bias is None:
            continue
        if isinstance(token, str):
            by_text.append((token, bias))
        elif isinstance(token, int) and not isinstance(token, bool):
            if not 0 <= token < n_vocab:
                raise InvalidInput(f"logit_bias: token id {token} is outside the vocabulary")
            biases[token] = bias
    return biases, tuple(by_text)


def _tokenize(vocab: Any, text: str) -> list[int]:
    data = text.encode()
    size = len(data) + 4
    while True:
        buffer = (llama_cpp.llama_token * size)()
        count = llama_cpp.llama_tokenize(vocab, data, len(data), buffer, size, False, False)
        if count >= 0:
            return list(buffer[:count])
        size = -count


def with_text_bias(params: SamplingParams, vocab: Any) -> SamplingParams:
    """``params`` with its text biases turned into token biases (engine thread only)."""
    biases = dict(params.logit_bias)
    for text, bias in params.text_bias:
        biases.update((token, bias) for token in _tokenize(vocab, text))
    return replace(params, logit_bias=biases, text_bias=())
