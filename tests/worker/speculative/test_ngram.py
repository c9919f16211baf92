"""Prompt lookup's drafts, as llama-server's ngram-simple picks them."""

from __future__ import annotations

from worker.speculative.ngram import ngram_draft


def test_the_tokens_after_the_latest_earlier_match_are_the_draft() -> None:
    # ... 1 2 | 3 4 5 6 ... then 1 2 again, most recently followed by 3 4 7 7.
    history = [9, 1, 2, 3, 4, 5, 6, 8, 1, 2, 3, 4, 7, 7, 0, 0, 0, 1]
    assert ngram_draft(history, 2, size_n=2, size_m=4) == [3, 4, 7, 7]


def test_the_draft_stops_at_size_m_and_at_the_end_of_the_history() -> None:
    history = [5, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 1]
    assert ngram_draft(history, 2, size_n=2, size_m=3) == [3, 4, 5]


def test_no_match_or_too_little_history_gives_no_draft() -> None:
    history = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    assert ngram_draft(history, 99, size_n=2, size_m=4) == []
    assert ngram_draft([1, 2, 3, 1], 2, size_n=2, size_m=4) == []


def test_a_match_followed_by_fewer_than_size_n_tokens_is_not_used() -> None:
    # The only earlier "1 2" is followed by a single token: the history's last.
    history = [7, 7, 7, 7, 7, 7, 7, 7, 1, 2, 1]
    assert ngram_draft(history, 2, size_n=2, size_m=4) == []
