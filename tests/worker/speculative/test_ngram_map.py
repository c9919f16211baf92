"""ngram-map-k and ngram-map-k4v's drafts, as llama-server's common_ngram_map makes them."""

from __future__ import annotations

from worker.speculative.ngram_map import NgramMap

# "1 2" once, followed by "3 4"; the history ends with 1 and 2 is sampled.
ONCE = [9, 1, 2, 3, 4, 8, 8, 8, 5, 5, 5, 5, 1]
# "1 2" twice, followed by "3 4" and then "5 6".
TWICE = [9, 1, 2, 3, 4, 7, 1, 2, 5, 6, 7, 7, 7, 1]


def _map(*, key_only: bool, min_hits: int = 1) -> NgramMap:
    return NgramMap(2, 2, key_only=key_only, min_hits=min_hits)


def test_ngram_map_k_guesses_what_followed_the_key() -> None:
    ngrams = _map(key_only=True)
    assert ngrams.draft(ONCE, 2) == [3, 4]
    assert ngrams.draft(ONCE, 7) == []  # "1 7" never came before
    assert _map(key_only=True).draft(ONCE[:5], 2) == []  # too little history


def test_a_key_guesses_no_more_than_it_had_kept_last_time() -> None:
    ngrams = _map(key_only=True)
    assert ngrams.draft(ONCE, 2) == [3, 4]
    ngrams.accepted(1)
    assert ngrams.draft(ONCE, 2) == [3]


def test_ngram_map_k4v_waits_for_min_hits() -> None:
    ngrams = _map(key_only=False, min_hits=2)
    assert ngrams.draft(ONCE, 2) == []
    assert ngrams.draft(ONCE, 2) == [3, 4]


def test_ngram_map_k4v_guesses_only_with_a_dominant_continuation() -> None:
    # "3 4" and "5 6" each followed "1 2" once: neither is twice as frequent as the other.
    assert _map(key_only=False).draft(TWICE, 2) == []
    assert _map(key_only=True).draft(TWICE, 2) == [5, 6]  # by key only: the latest


def test_a_shorter_history_at_a_new_request_forgets_what_is_gone() -> None:
    ngrams = _map(key_only=True)
    first = [9, 9, 9, 9, 9, 9, 7, 1, 2, 3, 4, 8, 8, 8, 1]
    ngrams.begin(first[:6])
    assert ngrams.draft(first, 2) == [3, 4]
    ngrams.accepted(0)
    assert ngrams.draft(first, 2) == []  # the key now guesses nothing
    # The next request's prompt keeps the first "1 2" but not what followed the first request's
    # start: the key learned there is dropped, so the later "1 2" guesses afresh.
    second = [*first[:9], 3, 4, 0, 1, 2, 3, 4, 8, 8, 8, 1]
    ngrams.begin(second[:9])
    assert ngrams.draft(second, 2) == [3, 4]
