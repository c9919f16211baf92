"""Lookup-cache drafts (``--spec-type ngram-cache``, ``-lcs``/``-lcd``): n-gram statistics.

A port of llama-server's ``common_ngram_cache`` (common/ngram-cache.cpp) and its speculative
type: each slot counts which token followed every 1- to 4-gram of its history (the context
cache), and may also read two files of such counts made by llama.cpp's ``llama-lookup-create``:
the dynamic cache (``-lcd``, 1- to 4-grams, trusted under stricter thresholds) and the static
cache (``-lcs``, 2-grams, which weighs the others' candidates and guesses last). Up to 8 tokens
are guessed, each while one cache has a candidate frequent enough among enough samples. Where
candidates tie, the first counted wins (upstream: its hash map's order). The files are read when
the model loads and never written, as upstream's server.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

__all__ = ["NgramCache", "load_lookup_cache"]

NGRAM_MIN, NGRAM_MAX, NGRAM_STATIC = 1, 4, 2
N_DRAFT = 8  # upstream's fixed draft length for this type
_NULL = -1  # LLAMA_TOKEN_NULL pads n-grams shorter than 4
# Per n-gram size: fewest samples, and the percentage the best candidate needs.
_LAX = ((2, 2, 1, 1), (66, 50, 50, 50))
_STRICT = ((4, 3, 2, 2), (75, 66, 66, 66))

Ngram = tuple[int, int, int, int]
Cache = dict[Ngram, dict[int, int]]
_RECORD = struct.Struct("<4ii")
_PAIR = struct.Struct("<ii")


def _ngram(tokens: Sequence[int]) -> Ngram:
    padded = [*tokens, _NULL, _NULL, _NULL, _NULL]
    return padded[0], padded[1], padded[2], padded[3]


def load_lookup_cache(path: Path) -> Cache:
    """A cache file as ``common_ngram_cache_save`` writes it; ``ValueError`` if unreadable."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read lookup cache {path}: {exc.strerror}") from None
    cache: Cache = {}
    offset = 0
    try:
        while offset < len(data):
            *ngram, count = _RECORD.unpack_from(data, offset)
            offset += _RECORD.size
            if count <= 0:
                raise struct.error("an n-gram without tokens")
            part = cache.setdefault(_ngram(ngram), {})
            for _ in range(count):
                token, times = _PAIR.unpack_from(data, offset)
                offset += _PAIR.size
                if times <= 0:
                    raise struct.error("a count below 1")
                part[token] = times
    except struct.error as exc:
        raise ValueError(f"lookup cache {path} is malformed: {exc}") from None
    return cache


def _update(cache: Cache, tokens: Sequence[int]) -> None:
    for size in range(NGRAM_MIN, NGRAM_MAX + 1):
        for i in range(size, len(tokens)):
            part = cache.setdefault(_ngram(tokens[i - size : i]), {})
            part[tokens[i]] = part.get(tokens[i], 0) + 1


def _from_static(static: Cache, ngram: Ngram) -> int:
    part = static.get(ngram)
    if part is None:
        return _NULL
    best, best_count = _NULL, 0
    for token, count in part.items():
        if count > best_count:
            best, best_count = token, count
    total = sum(part.values())
    size = NGRAM_STATIC - 1
    if total < _LAX[0][size] or 100 * best_count < _LAX[1][size] * total:
        return _NULL
    return best


def _from_primary(
    primary: Cache,
    ngrams: list[Ngram],
    static_part: dict[int, int],
    thresholds: tuple[tuple[int, ...], tuple[int, ...]],
) -> int:
    for i in range(len(ngrams) - 1, -1, -1):  # the longest n-gram first
        part = primary.get(ngrams[i])
        if part is None:
            continue
        best, best_primary, best_static, total = _NULL, 0, 0, 0
        for token, count in part.items():
            weight = 100 * static_part[token] if token in static_part else 1
            if count * weight > best_primary * best_static:
                best, best_primary, best_static = token, count, weight
            total += count
        if total < thresholds[0][i] or 100 * best_primary < thresholds[1][i] * total:
            continue
        return best
    return _NULL


class NgramCache:
    def __init__(self, n_seq: int, *, static: Cache, dynamic: Cache) -> None:
        self._static, self._dynamic = static, dynamic  # read only: shared by the slots
        self._context: list[Cache] = [{} for _ in range(n_seq)]
        self._counted = [0] * n_seq  # history tokens each slot's context cache has counted

    def draft(self, seq: int, history: Sequence[int], last: int) -> list[int]:
        """Up to 8 guesses after ``history`` and the just sampled ``last``."""
        if self._counted[seq] < len(history) + 1:
            # As upstream, only n-grams within the new tokens are counted.
            _update(self._context[seq], [*history[self._counted[seq] :], last])
            self._counted[seq] = len(history) + 1
        tokens = [*history, last]
        size = len(tokens)
        if size < NGRAM_STATIC:
            return []
        guesses: list[int] = []

        def token_at(i: int) -> int:
            if i < 0:
                return _NULL
            return tokens[i] if i < size else guesses[i - size]

        while len(guesses) < N_DRAFT:
            end = size + len(guesses)
            static_ngram = _ngram([token_at(j) for j in range(end - NGRAM_STATIC, end)])
            static_part = self._static.get(static_ngram, {})
            ngrams = [
                _ngram([token_at(j) for j in range(end - n, end)])
                for n in range(NGRAM_MIN, NGRAM_MAX + 1)
            ]
            token = _from_primary(self._context[seq], ngrams, static_part, _LAX)
            if token == _NULL:
                token = _from_primary(self._dynamic, ngrams, static_part, _STRICT)
            if token == _NULL:
                token = _from_static(self._static, static_ngram)
            if token == _NULL:
                break
            guesses.append(token)
        return guesses
