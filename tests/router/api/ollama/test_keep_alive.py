"""``keep_alive``: seconds, Go durations, and negative for ever."""

from __future__ import annotations

import math

import pytest

from corral.http.errors import ApiError
from router.api.ollama.keep_alive import keep_alive_seconds


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(0, 0.0), (30, 30.0), ("0", 0.0), ("45", 45.0), ("5m", 300.0), ("1h30m", 5400.0),
     ("1.5s", 1.5), ("300ms", 0.3), (-1, math.inf), ("-1m", math.inf), ("-1", math.inf)],
)  # fmt: skip
def test_durations_read_as_ollama_reads_them(value: float | str, seconds: float) -> None:
    assert keep_alive_seconds(value) == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["5 minutes", "m", "", "1x", "nan"])
def test_anything_else_is_a_400(value: str) -> None:
    with pytest.raises(ApiError) as caught:
        keep_alive_seconds(value)
    assert caught.value.status == 400
