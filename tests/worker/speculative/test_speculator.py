"""Which type guesses for a slot when several are given: llama-server's order of preference."""

from __future__ import annotations

from worker.speculative.settings import SpeculativeSettings
from worker.speculative.speculator import DraftRequest, Speculator

HISTORY = [9, 1, 2, 3, 4, 8, 8, 8, 8, 1]  # ngram-simple: "1 2" was followed by "3 4"


def _guesses(*types: str) -> list[int]:
    settings = SpeculativeSettings(
        types=types, ngram_size_n=2, ngram_size_m=2, mod_n_match=2, mod_n_max=2, mod_n_min=1
    )
    speculator = Speculator(settings, None, vocab=None, n_seq=1)
    speculator.begin(0, seed=1, prompt=[1, 2, 7, 7])  # ngram-mod: "1 2" → 7, "2 7" → 7
    return speculator.propose([DraftRequest(0, HISTORY, 2, limit=4)])[0]


def test_ngram_simple_is_preferred_whatever_the_order_given() -> None:
    assert _guesses("ngram-mod") == [7, 7]
    assert _guesses("ngram-mod", "ngram-simple") == _guesses("ngram-simple") == [3, 4]
