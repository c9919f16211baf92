"""The pull progress bar: speed and time left from the progress messages, on a fake clock."""

from __future__ import annotations

import io

import pytest

from corral.children.download_payloads import DownloadProgress
from router.cli.hub_download import ProgressBar, format_duration
from tests.support.fakes.fake_clock import FakeClock

MB = 1_000_000


def _progress(done: int, total: int = 100 * MB) -> DownloadProgress:
    return DownloadProgress("https://hub/x.gguf", done, total, path="x.gguf")


def test_speed_and_time_left_come_from_the_messages_and_the_clock() -> None:
    out, clock = io.StringIO(), FakeClock()
    bar = ProgressBar(out, clock)
    bar(_progress(0))
    clock.advance(2)
    bar(_progress(20 * MB))  # 10 MB/s, 80 MB to go: 8 s
    clock.advance(6)
    bar(_progress(80 * MB))  # still 10 MB/s on average, 2 s left
    clock.advance(2)
    bar(_progress(100 * MB))
    lines = out.getvalue().splitlines()
    assert lines[0] == "x.gguf [------------------------------]   0% 0 B/100.0 MB"
    assert lines[1].endswith(" 20% 20.0 MB/100.0 MB 10.0 MB/s 8s left")
    assert lines[2].endswith(" 80% 80.0 MB/100.0 MB 10.0 MB/s 2s left")
    assert lines[3].endswith("100% 100.0 MB/100.0 MB 10.0 MB/s")  # done: no time left


def test_a_resumed_download_counts_only_what_this_run_fetched() -> None:
    out, clock = io.StringIO(), FakeClock()
    bar = ProgressBar(out, clock)
    bar(_progress(50 * MB))  # the partial file from last time
    clock.advance(10)
    bar(_progress(60 * MB))
    assert out.getvalue().splitlines()[1].endswith(" 60% 60.0 MB/100.0 MB 1.0 MB/s 40s left")


@pytest.mark.parametrize(
    ("seconds", "text"), [(0.4, "0s"), (59, "59s"), (75, "1m15s"), (3725, "1h02m")]
)
def test_durations_are_short(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
