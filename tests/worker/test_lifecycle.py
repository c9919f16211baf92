"""Load-progress thinning (worker.lifecycle.LoadProgress), on a clock the test moves."""

from __future__ import annotations

from worker.lifecycle import LoadProgress


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _progress() -> tuple[LoadProgress, list[float], _Clock]:
    sent: list[float] = []
    clock = _Clock()
    return LoadProgress(sent.append, clock), sent, clock


def test_first_and_last_samples_always_go_out() -> None:
    progress, sent, _ = _progress()
    for value in (0.0, 0.1, 0.2, 1.0):
        progress(value)
    assert sent == [0.0, 1.0]


def test_samples_in_between_go_out_at_most_every_200_ms() -> None:
    progress, sent, clock = _progress()
    progress(0.0)
    clock.now += 0.125  # binary fractions: the sums are exact
    progress(0.3)
    clock.now += 0.125
    progress(0.5)
    clock.now += 0.125
    progress(0.6)
    assert sent == [0.0, 0.5]


def test_a_repeated_value_is_not_sent_again_until_a_new_load() -> None:
    progress, sent, _ = _progress()
    progress(0.0)
    progress(1.0)
    progress(1.0)
    assert sent == [0.0, 1.0]
    progress.restart()  # a wake-up loads again: even the same value is news
    progress(1.0)
    assert sent == [0.0, 1.0, 1.0]
