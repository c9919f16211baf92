"""ngram-cache's drafts and lookup cache files, as llama.cpp's common/ngram-cache.cpp."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from worker.speculative.ngram_cache import NgramCache, load_lookup_cache


def _record(ngram: tuple[int, ...], counts: dict[int, int]) -> bytes:
    padded = [*ngram, *[-1] * (4 - len(ngram))]
    pairs = b"".join(struct.pack("<ii", token, count) for token, count in counts.items())
    return struct.pack("<4ii", *padded, len(counts)) + pairs


def test_a_lookup_cache_file_is_read_as_llama_lookup_create_writes_it(tmp_path: Path) -> None:
    path = tmp_path / "static.bin"
    path.write_bytes(_record((5, 6), {7: 3, 8: 1}) + _record((6, 7), {9: 2}))
    assert load_lookup_cache(path) == {(5, 6, -1, -1): {7: 3, 8: 1}, (6, 7, -1, -1): {9: 2}}


@pytest.mark.parametrize(
    "data", [_record((5, 6), {7: 3})[:-2], _record((5,), {}), _record((5,), {7: 0})]
)
def test_a_malformed_lookup_cache_is_refused(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "bad.bin"
    path.write_bytes(data)
    with pytest.raises(ValueError, match="is malformed"):
        load_lookup_cache(path)


def test_the_static_cache_guesses_where_the_history_has_nothing() -> None:
    # 2-grams: "5 6" → 7 (3 of 4 samples, above the 50 % it needs), "6 7" → 9 (2 of 2).
    static = {(5, 6, -1, -1): {7: 3, 8: 1}, (6, 7, -1, -1): {9: 2}}
    lookup = NgramCache(1, static=static, dynamic={})
    assert lookup.draft(0, [1, 2, 5], 6) == [7, 9]


def test_the_history_guesses_first_from_its_longest_n_gram() -> None:
    lookup = NgramCache(1, static={}, dynamic={})
    # "3 4" was followed by 5 both times: the 2-gram's lax threshold (2 samples) is met.
    assert lookup.draft(0, [3, 4, 5, 0, 3, 4, 5, 1, 3], 4)[:1] == [5]


def test_the_dynamic_cache_needs_more_samples_than_the_history() -> None:
    one = {(3, 4, -1, -1): {5: 1}}  # the 2-gram's strict threshold is 3 samples
    assert NgramCache(1, static={}, dynamic=one).draft(0, [0, 3], 4) == []
    three = {(3, 4, -1, -1): {5: 3}}
    assert NgramCache(1, static={}, dynamic=three).draft(0, [0, 3], 4)[:1] == [5]
