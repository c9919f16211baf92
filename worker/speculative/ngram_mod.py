"""Hashed n-gram drafts (``--spec-type ngram-mod``): no draft model, one table for every slot.

As llama-server's ``common_ngram_mod`` and ``common_speculative_impl_ngram_mod``
(common/ngram-mod.cpp, common/speculative.cpp): a fixed table of 4M entries maps the hash of
``n_match`` tokens to the token that last followed them. A slot's prompt is added when its
request starts and its history in chunks of 32 as it grows; a draft follows the table from the
last ``n_match`` tokens for up to ``n_max`` tokens, and is dropped when it ends before ``n_min``.
The table outlives requests (what one answer repeated helps the next), is cleared when more
than a quarter is used, and after five drafts in a row of which less than a quarter was kept.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

__all__ = ["NgramMod"]

_SIZE = 4 * 1024 * 1024
_EMPTY = -1
_MASK = (1 << 64) - 1  # size_t arithmetic
_MULTIPLIER = 6364136223846793005
_CHUNK = 32  # history added once this much is new
_MAX_OCCUPANCY = 0.25
_LOW_ACCEPTANCE = 0.25
_LOW_STREAK = 5


class NgramMod:
    def __init__(self, n_match: int, n_max: int, n_min: int, n_seq: int) -> None:
        self._n = n_match
        self._n_max = n_max
        self._n_min = n_min
        self._entries = array("i", [_EMPTY]) * _SIZE
        self._used = 0
        self._last_added = [0] * n_seq  # each slot's history added up to here
        self._drafted = [0] * n_seq  # each slot's last draft's length
        self._low = [0] * n_seq  # each slot's drafts in a row mostly refused

    def _index(self, tokens: Sequence[int], start: int) -> int:
        value = 0
        for token in tokens[start : start + self._n]:
            value = (value * _MULTIPLIER + token) & _MASK
        return value % _SIZE

    def _add(self, tokens: Sequence[int], start: int) -> None:
        index = self._index(tokens, start)
        if self._entries[index] == _EMPTY:
            self._used += 1
        self._entries[index] = tokens[start + self._n]

    def _reset(self) -> None:
        self._entries = array("i", [_EMPTY]) * _SIZE
        self._used = 0

    def begin(self, seq: int, prompt: Sequence[int]) -> None:
        """A request starts in slot ``seq`` with ``prompt``."""
        self._last_added[seq] = self._drafted[seq] = 0
        if len(prompt) < self._n:
            return
        for start in range(len(prompt) - self._n):
            self._add(prompt, start)
        self._last_added[seq] = len(prompt) - self._n
        if self._used / _SIZE > _MAX_OCCUPANCY:
            self._reset()

    def draft(self, seq: int, history: Sequence[int], last: int) -> list[int]:
        """Up to ``n_max`` guesses after ``history`` and the just sampled ``last``."""
        self._drafted[seq] = 0
        n, length = self._n, len(history)
        if length < n:
            return []
        if self._last_added[seq] + _CHUNK < length:
            for start in range(self._last_added[seq], length - n):
                self._add(history, start)
            self._last_added[seq] = length - n
        tokens = [*history[length - n + 1 :], last]
        for i in range(self._n_max):
            token = self._entries[self._index(tokens, i)]
            if token == _EMPTY:
                if i < self._n_min:
                    return []
                break
            tokens.append(token)
        guesses = tokens[n:]
        self._drafted[seq] = len(guesses)
        return guesses

    def accepted(self, seq: int, count: int) -> None:
        """``count`` of slot ``seq``'s last guesses were kept."""
        if not self._drafted[seq]:
            return
        if count / self._drafted[seq] < _LOW_ACCEPTANCE:
            self._low[seq] += 1
            if self._low[seq] >= _LOW_STREAK:
                self._reset()
                self._low[seq] = self._last_added[seq] = 0
        else:
            self._low[seq] = 0
