"""A request's logit_bias read as llama-server reads it (worker.sampling.logit_bias)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from worker.host.errors import InvalidInput
from worker.sampling.logit_bias import parse_logit_bias


@pytest.mark.parametrize(
    ("raw", "by_id", "by_text"),
    [
        ([[5, -1.5], [7, False]], {5: -1.5, 7: -math.inf}, ()),
        ({"5": 2, " the": -100}, {5: 2.0}, ((" the", -100.0),)),
        ([[" the", False], [9, "junk"], [1, 2, 3]], {}, ((" the", -math.inf),)),
        (None, {}, ()),
    ],
)
def test_ids_and_text_both_bias(
    raw: Any, by_id: dict[int, float], by_text: tuple[tuple[str, float], ...]
) -> None:
    assert parse_logit_bias(raw, n_vocab=10) == (by_id, by_text)


def test_an_id_outside_the_vocabulary_is_refused_naming_the_field() -> None:
    # InvalidInput: a 400 (worker/api/errors.py, tests/worker/api/test_errors.py).
    with pytest.raises(InvalidInput, match="logit_bias"):
        parse_logit_bias({"10": 1}, n_vocab=10)
