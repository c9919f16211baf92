"""The closest names to a mistyped one."""

from __future__ import annotations

import pytest

from corral.suggest import closest, did_you_mean, edit_distance

MODELS = ["SmolLM2-135M-Instruct.Q4_1", "acme/tiny-GGUF:Q8_0", "qwen2.5-coder"]


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("smollm", ["SmolLM2-135M-Instruct.Q4_1"]),  # a prefix difflib alone scores too low
        ("acme/tiny-gguf:q8", ["acme/tiny-GGUF:Q8_0"]),
        ("qwen2.5-codr", ["qwen2.5-coder"]),
        ("llama", []),
        ("", []),
    ],
)
def test_closest_names(word: str, expected: list[str]) -> None:
    assert closest(word, MODELS) == expected


def test_did_you_mean_words_one_or_several() -> None:
    assert did_you_mean("ctx-sise", ["ctx-size", "threads"]) == "; did you mean 'ctx-size'?"
    several = did_you_mean("a", ["ab", "ac"], limit=2)
    assert several == "; did you mean 'ab' or 'ac'?"
    assert did_you_mean("zzz", ["ctx-size"]) == ""


FLAGS = ["--port", "--prio", "--props", "--proxy", "--host", "--threads", "--models-max"]


@pytest.mark.parametrize(
    ("typed", "first"),
    [
        ("--prot", "--port"),  # a transposition: difflib alone ranks --prio first
        ("--piro", "--prio"),
        ("--hsot", "--host"),
        ("--thraeds", "--threads"),
        ("--modles-max", "--models-max"),
        ("--prots", "--props"),  # one substitution beats a swap plus an insertion
        ("--prox", "--proxy"),  # contained in a name: first
    ],
)
def test_a_typo_ranks_its_flag_first(typed: str, first: str) -> None:
    assert closest(typed, FLAGS)[0] == first


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [("port", "prot", 1), ("port", "port", 0), ("", "abc", 3), ("ca", "abc", 3), ("abc", "", 3)],
)
def test_edit_distance_counts_a_swap_as_one(a: str, b: str, distance: int) -> None:
    assert edit_distance(a, b) == distance
