"""N-gram map drafts (``--spec-type ngram-map-k`` and ``ngram-map-k4v``): each slot its own map.

A port of llama-server's ``common_ngram_map`` (common/ngram-map.cpp), quirks included, so that
the same settings guess the same tokens. The last ``size_n`` tokens (ending with the one just
sampled) are looked up in the slot's history, through a hash of earlier n-grams and then by a
scan, newest first. ``ngram-map-k`` guesses the ``size_m`` tokens after the match; it remembers
per key how many of its last guesses were kept and guesses no more than that next time.
``ngram-map-k4v`` counts, per key, up to four different m-grams that followed it, and guesses
only once the key was seen ``min_hits`` times and its most frequent m-gram is at least twice as
frequent as the others together. A new request whose history is shorter than the last drops
what its map learned from the part that is gone (a reasoning block a template removed).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["NgramMap"]

_MAX_VALUES = 4
_HASH_SIZE = 262144
_MAX_COUNT = 16380
_LCG = 2654435761  # near (sqrt(5) - 1) / 2 * 2^32
_MASK = 0xFFFFFFFF


def _hash(tokens: Sequence[int], start: int, length: int) -> int:
    value = 0
    for token in tokens[start : start + length]:
        value = (value * _LCG + token) & _MASK
    return value


def _empty_values(size_m: int) -> list[list[int]]:
    # Each: [index of the m-gram in the history (0: unused), times seen, kept at its last draft].
    return [[0, 0, size_m] for _ in range(_MAX_VALUES)]


@dataclass(slots=True)
class _Key:
    key_idx: int  # where the n-gram is in the history
    stat_idx: int = 0  # values counted up to here
    key_num: int = 0  # times looked up
    values: list[list[int]] = field(default_factory=list)


class NgramMap:
    def __init__(self, size_n: int, size_m: int, *, key_only: bool, min_hits: int) -> None:
        self._n, self._m = size_n, size_m
        self._key_only = key_only
        self._min_hits = min_hits
        self._keys: list[_Key] = []
        self._key_map = array("I", [0]) * _HASH_SIZE  # hash → index of an n-gram (0: none)
        self._key_map_last = 0  # n-grams up to here are in the key map
        self._last_begin = 0  # the history's length when the request started
        self._last_check = 0
        self._drafted: tuple[int, int] | None = None  # (key, value) of the last draft

    def begin(self, tokens: Sequence[int]) -> None:
        """A request starts with ``tokens`` in the slot."""
        size = len(tokens)
        cleanup = self._last_begin
        if cleanup > size:
            cleanup = size - self._n - self._m if size > self._n + self._m else 0
        if size < self._last_check:
            key_map = self._key_map
            for i, index in enumerate(key_map):
                if index != 0 and index >= cleanup:
                    key_map[i] = 0
            self._key_map_last = cleanup - 1 if cleanup > 0 else 0
            self._drop_keys_from(cleanup)
        self._last_check = self._last_begin = size

    def _drop_keys_from(self, cleanup: int) -> None:
        for i in range(len(self._keys) - 1, -1, -1):
            key = self._keys[i]
            if key.key_idx >= cleanup:
                del self._keys[i]
                continue
            if self._key_only:
                continue
            values = key.values
            for j in range(_MAX_VALUES - 1, -1, -1):
                if values[j][0] != 0 and values[j][0] >= cleanup:
                    for k in range(j, _MAX_VALUES - 1):
                        values[k] = list(values[k + 1])
                    values[-1][0] = values[-1][1] = 0
            if values[0][0] == 0:
                del self._keys[i]

    def draft(self, tokens: Sequence[int], sampled: int) -> list[int]:
        """Guesses after ``tokens`` and the just ``sampled`` token (empty: none)."""
        self._drafted = None
        n, m, length = self._n, self._m, len(tokens)
        if length < 2 * n + m:
            return []
        self._last_check = length
        pattern = [*tokens[length - n + 1 :], sampled]
        match = self._find(tokens, pattern)
        self._index_new_ngrams(tokens)
        if match == 0:
            return []
        offset = next(
            (
                i
                for i, k in enumerate(self._keys)
                if list(tokens[k.key_idx : k.key_idx + n]) == pattern
            ),
            len(self._keys),
        )
        if offset == len(self._keys):
            self._keys.append(_Key(key_idx=match, values=_empty_values(m)))
        key = self._keys[offset]
        key.key_num = min(key.key_num + 1, _MAX_COUNT)
        chosen: int | None = 0
        if not self._key_only:
            if key.key_num < self._min_hits:
                return []
            self._count_values(key, tokens, pattern, match)
            chosen = self._most_frequent(key)
        if chosen is None:
            return []
        count = min(m, key.values[chosen][2])
        self._drafted = (offset, chosen)
        # As upstream, the tokens after this match, whichever value was chosen.
        return list(tokens[match + n : match + n + count])

    def _find(self, tokens: Sequence[int], pattern: list[int]) -> int:
        """The pattern's position in the history (0: not found)."""
        n, m, length = self._n, self._m, len(tokens)
        index = self._key_map[_hash(pattern, 0, n) % _HASH_SIZE]
        if index != 0 and index < length - n - m - 1 and list(tokens[index : index + n]) == pattern:
            return index
        if self._last_begin > n + m + 1:
            for j in range(self._last_begin - n - m - 1, self._key_map_last, -1):
                if list(tokens[j : j + n]) == pattern:
                    return j
        for j in range(length - n - m - 1, max(self._last_begin, self._key_map_last), -1):
            if list(tokens[j : j + n]) == pattern:
                return j
        return 0

    def _index_new_ngrams(self, tokens: Sequence[int]) -> None:
        n, m, length = self._n, self._m, len(tokens)
        ranges = [range(length - n - m - 1, max(self._last_begin, self._key_map_last), -1)]
        if self._last_begin > n + m + 1:
            ranges.insert(0, range(self._last_begin - n - m - 1, self._key_map_last, -1))
        for positions in ranges:
            for j in positions:
                slot = _hash(tokens, j, n) % _HASH_SIZE
                if self._key_map[slot] == 0:  # collisions may occur
                    self._key_map[slot] = j
        self._key_map_last = max(length - n - m - 1, self._key_map_last)

    def _count_values(
        self, key: _Key, tokens: Sequence[int], pattern: list[int], match: int
    ) -> None:
        """Count the m-grams that followed the key since its last count, up to ``match``."""
        n, m = self._n, self._m
        for i in range(key.stat_idx, match + 1):
            if list(tokens[i : i + n]) != pattern:
                continue
            start = i + n
            for value in key.values:
                if value[0] == 0:
                    value[:] = [start, 0, m]
                elif tokens[start : start + m] != tokens[value[0] : value[0] + m]:
                    continue
                value[1] = min(value[1] + 1, _MAX_COUNT)
                break
        key.stat_idx = match

    @staticmethod
    def _most_frequent(key: _Key) -> int | None:
        """The value to guess, unless it is not at least twice as frequent as the others."""
        counts = [value[1] for value in key.values]
        best = 0
        for v, count in enumerate(counts):
            if count > counts[best]:
                best = v
        others = sum(counts) - counts[best]
        if others > 0 and counts[best] < 2 * others:
            return None
        return best

    def accepted(self, count: int) -> None:
        """``count`` of the last guesses were kept: the next guess for that key is no longer."""
        if self._drafted is not None:
            key, value = self._drafted
            self._keys[key].values[value][2] = count
