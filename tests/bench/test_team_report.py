"""bench/team_report.py: the report's arithmetic, on outcomes made up for it."""

from __future__ import annotations

import math

import pytest

from bench.support.team_setup import llama_loads
from bench.team_report import (
    Outcome,
    fair_figures,
    percentile,
    ratios,
    render,
    render_fair,
    side_figures,
)


def test_percentile_interpolates_between_ranks() -> None:
    assert percentile([3.0, 1.0, 2.0, 4.0, 5.0], 50) == 3.0
    assert percentile([1.0, 2.0], 95) == pytest.approx(1.95)
    assert percentile([7.0], 95) == 7.0
    assert math.isnan(percentile([], 50))


def _outcomes() -> list[Outcome]:
    return [
        Outcome("user-1", "interactive", "a", 0.0, ttft_s=1.0, done=True, tokens=32),
        Outcome("user-2", "interactive", "b", 5.0, ttft_s=3.0, done=True, tokens=16),
        # Still waiting for its first token when the 60 s window closed: counts 60 - 50 s.
        Outcome("user-1", "interactive", "b", 50.0, cut=True),
        Outcome("agent", "agent", "a", 1.0, ttft_s=2.0, cut=True),  # cut mid-answer
        Outcome("batch-1", "batch", "c", 9.0, ttft_s=4.0, done=True, tokens=16),
        Outcome("batch-2", "batch", "c", 9.0, error="HTTP 503: busy"),
    ]


def test_side_figures_count_only_what_was_delivered_and_waits_at_the_end() -> None:
    side = side_figures(_outcomes(), 60.0, [{"a": 2, "b": 1, "c": 1}], batch_in_trace=4)
    interactive = side.classes["interactive"]
    assert (interactive.sent, interactive.completed, interactive.cut) == (3, 2, 1)
    assert interactive.waiting_at_end == 1
    assert interactive.tokens == 48
    assert interactive.ttft_max_s == 10.0
    assert interactive.ttft_p50_s == 3.0
    assert side.classes["agent"].tokens == 0  # a cut answer is not delivered
    assert side.classes["batch"].errors == 1
    assert (side.requests, side.tokens, side.errors, side.loads) == (6, 64, 1, 4)
    assert side.swaps == 1  # a's second load; each model's first is no swap
    assert side.swaps_per_100 == pytest.approx(100 / 6)
    assert side.error_examples == ["HTTP 503: busy"]


def test_ratios_are_corral_over_llama_against_the_issues_targets() -> None:
    llama = side_figures(_outcomes(), 60.0, [{"a": 2, "b": 3}, {"a": 2, "b": 1}], batch_in_trace=4)
    corral = side_figures(_outcomes()[:2], 60.0, [{"a": 1}, {"a": 2}], batch_in_trace=4)
    found = ratios(corral, llama, "thrash")
    # p95 of 1, 3 s (0.1 s over 2.9) against p95 of 1, 3, 10 s (3 + 0.9 x 7).
    assert found["interactive TTFT p95"][0] == pytest.approx(2.9 / 9.3)
    assert found["interactive TTFT p95"][1]
    # Swaps: corral 1 (a again in its second window) of 2 requests, llama.cpp 1 + 2 + 1 of 6.
    assert (corral.swaps, llama.swaps) == (1, 4)
    assert found["swaps per 100 requests"][0] == pytest.approx(50 / (400 / 6))
    assert not found["swaps per 100 requests"][1]
    assert found["tokens delivered"][0] == pytest.approx(48 / 64)
    assert not found["tokens delivered"][1]
    table = render({"corral": corral, "llama.cpp": llama}, "thrash")
    assert "| swaps per 100 requests | 0.75 | ≤ 0.5 | no |" in table
    assert (
        "| batch served, none failed | 0 completed, 0 cut, 0 failed | > 0, 0 failed | no |" in table
    )
    assert "| batch backlog left unsent | 4 | 2 |" in table
    assert "| errors, both sides | 0 + 1 | 0 | no |" in table


def test_llama_loads_are_the_spawns_its_router_logged() -> None:
    text = (
        "srv load: spawning server instance with name=smollm2 on port 4001\n"
        "srv load: spawning server instance with args:\n"
        "srv load: spawning server instance with name=standin-135m on port 4002\n"
        "srv load: spawning server instance with name=smollm2 on port 4003\n"
    )
    assert llama_loads(text) == {"smollm2": 2, "standin-135m": 1}


def test_no_swaps_against_none_meets_the_swaps_target_and_some_do_not() -> None:
    none = side_figures(_outcomes(), 60.0, [{"a": 1, "b": 1}], batch_in_trace=4)
    some = side_figures(_outcomes(), 60.0, [{"a": 2, "b": 1}], batch_in_trace=4)
    ratio, met = ratios(none, none, "thrash")["swaps per 100 requests"]
    assert math.isnan(ratio)
    assert met
    assert not ratios(some, none, "thrash")["swaps per 100 requests"][1]


def test_the_team_traces_targets_are_issue_51s_and_swaps_are_only_shown() -> None:
    llama = side_figures(_outcomes(), 60.0, [{"a": 2, "b": 3}], batch_in_trace=4)
    corral = side_figures(_outcomes()[:2], 60.0, [{"a": 1}], batch_in_trace=4)
    found = ratios(corral, llama)
    assert list(found) == ["interactive TTFT p95", "agent TTFT p95", "tokens delivered"]
    assert not found["tokens delivered"][1]  # 48 of 64: the box did less
    table = render({"corral": corral, "llama.cpp": llama})
    assert "| interactive TTFT p95 | 0.31 | ≤ 0.4 | yes |" in table
    assert "| swaps per 100 requests |" not in table.split("| target |")[1]
    assert "| swaps per 100 requests | 0.0 | 50.0 |" in table  # still in the figures
    assert "| batch longest wait | nan s |" in table  # Corral sent no batch request here


def _fair(key: str, sent: float, ttft: float | None, tokens: int = 0) -> Outcome:
    return Outcome(key, "interactive", "m", sent, ttft, ttft is not None, tokens, key=key)


def test_the_fair_report_reads_the_light_key_against_itself_alone_and_heavy_against_fifo() -> None:
    window = 30.0
    heavy = [_fair("heavy", 0.0, 0.5, 256), _fair("heavy", 0.0, 0.5, 256)]
    alone = [_fair("light", s, 0.2, 32) for s in (2.0, 5.0, 8.0)]
    # With the heavy key: the light key's p95 of 0.2, 0.2, 0.4 s is 0.38 s (1.9 x alone).
    busy = [_fair("light", 2.0, 0.2, 32), _fair("light", 5.0, 0.2, 32)]
    busy.append(_fair("light", 8.0, 0.4, 32))
    swap = fair_figures([*busy, *heavy], alone, window)
    assert (swap.light_alone_p95_s, swap.heavy_tokens, swap.light_tokens) == (0.2, 512, 96)
    assert swap.light_p95_s == pytest.approx(0.38)
    cut = _fair("heavy", 29.0, None)
    cut.cut = True
    fifo_error = Outcome("heavy", "interactive", "m", 1.0, error="HTTP 503", key="heavy")
    fifo = fair_figures([*busy, heavy[0], fifo_error, cut], [], window)
    assert (fifo.heavy_tokens, fifo.errors) == (256, 1)
    assert math.isnan(fifo.light_alone_p95_s)  # not run alone
    table = render_fair({"corral": swap, "corral fifo": fifo}, "corral", "corral fifo")
    assert "| light key p95, heavy on / alone | 1.90 | ≤ 1.5 | no |" in table
    assert "| heavy key tokens / under fifo | 2.00 | ≥ 0.9 | yes |" in table
    assert "| errors, every run | 1 | 0 | no |" in table
