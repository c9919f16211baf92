"""ngram-mod's drafts, as llama-server's hashed table makes them (common/ngram-mod.cpp)."""

from __future__ import annotations

from worker.speculative.ngram_mod import NgramMod

PROMPT = [1, 2, 3, 4, 5, 6, 9]  # 1 2 → 3, 2 3 → 4, ..., 5 6 → 9


def _learned(n_max: int, n_min: int, prompt: list[int] = PROMPT) -> NgramMod:
    mod = NgramMod(n_match=2, n_max=n_max, n_min=n_min, n_seq=2)
    mod.begin(0, prompt)
    return mod


def test_a_draft_follows_the_table_from_the_last_n_tokens() -> None:
    # The history's last token and the one just sampled make the first n-gram.
    assert _learned(n_max=4, n_min=1).draft(0, [8, 8, 1], 2) == [3, 4, 5, 6]
    # Up to where the table knows no next token ("6 9" was never followed).
    assert _learned(n_max=8, n_min=1).draft(0, [8, 8, 1], 2) == [3, 4, 5, 6, 9]
    assert _learned(n_max=8, n_min=0).draft(0, [8, 8, 7], 7) == []


def test_the_table_is_shared_by_every_slot() -> None:
    assert _learned(n_max=2, n_min=1).draft(1, [8, 8, 3], 4) == [5, 6]


def test_a_draft_shorter_than_n_min_is_dropped() -> None:
    assert _learned(n_max=8, n_min=5).draft(0, [8, 8, 1], 2) == [3, 4, 5, 6, 9]
    assert _learned(n_max=8, n_min=6).draft(0, [8, 8, 1], 2) == []


def test_five_mostly_refused_drafts_in_a_row_clear_the_table() -> None:
    mod = _learned(n_max=4, n_min=1)
    for _ in range(4):
        assert mod.draft(0, [8, 8, 1], 2) == [3, 4, 5, 6]
        mod.accepted(0, 0)
    mod.draft(0, [8, 8, 1], 2)
    mod.accepted(0, 1)  # a quarter kept: the streak ends
    for _ in range(4):
        mod.draft(0, [8, 8, 1], 2)
        mod.accepted(0, 0)
    assert mod.draft(0, [8, 8, 1], 2) == [3, 4, 5, 6]
    mod.accepted(0, 0)  # the fifth in a row
    assert mod.draft(0, [8, 8, 1], 2) == []
