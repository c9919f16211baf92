"""The closest names to a mistyped one."""

from __future__ import annotations

import pytest

from corral.suggest import closest, did_you_mean

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
