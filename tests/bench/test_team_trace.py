"""bench/team_trace.py: the trace both routers replay is the same for the same seed, and the
thrash and fair traces and the batch bursts are the shapes issue 51 names."""

from __future__ import annotations

import argparse
import itertools

import msgspec

from bench.team import traces
from bench.team_trace import (
    BURST_EVERY_S,
    CLASSES,
    MODELS,
    Trace,
    make_fair_trace,
    make_thrash_trace,
    make_trace,
)


def test_the_same_seed_gives_the_same_trace_and_another_seed_another() -> None:
    first = msgspec.json.encode(make_trace(37, 60))
    assert msgspec.json.encode(make_trace(37, 60)) == first
    assert msgspec.json.encode(make_trace(38, 60)) != first
    # What --trace-out writes reads back as the same trace.
    assert msgspec.json.encode(msgspec.json.decode(first, type=Trace)) == first


def test_the_trace_asks_for_more_models_than_fit_from_every_class() -> None:
    trace = make_trace(37, 60)
    requests = trace.requests()
    assert {r.model for r in requests} == set(MODELS)  # three models, room for two
    assert {r.cls for r in requests} == set(CLASSES)
    users = [a for a in trace.actors if a.cls == "interactive"]
    # Each user mostly on a home model, switching sometimes; some send X-Conversation-Id.
    for user in users:
        models = [r.model for r in user.requests]
        home = max(set(models), key=models.count)
        assert 0.5 < models.count(home) / len(models) < 1
    assert any(r.conversation for u in users for r in u.requests)
    assert any(not r.conversation for u in users for r in u.requests)
    # The agent's prompts share their first message (the tool definitions) and grow by turns.
    agent = next(a for a in trace.actors if a.cls == "agent").requests
    assert len({msgspec.json.encode(r.body["messages"][0]) for r in agent}) == 1
    assert len(agent[1].body["messages"]) > len(agent[0].body["messages"])


def test_users_the_agent_and_the_batch_backlog_outlast_the_window() -> None:
    for window in (15, 60, 120):
        trace = make_trace(1, window)
        for actor in trace.actors:
            least = sum(r.wait_s for r in actor.requests)
            if actor.cls != "batch":
                assert least > window  # they are still asking when the window closes
        batch = [r for r in trace.requests() if r.cls == "batch"]
        assert len({r.model for r in batch}) == 1
        # A backlog: ten requests per second of window, more than two lanes get through.
        assert len(batch) == window * 10


def test_the_batch_job_can_be_a_job_to_finish() -> None:
    """``--batch-per-second 0.5``: 30 completions a minute, the first design."""
    backlog, job = make_trace(37, 60).requests(), make_trace(37, 60, 0.5).requests()
    batch = [[r for r in trace if r.cls == "batch"] for trace in (backlog, job)]
    assert [len(requests) for requests in batch] == [600, 30]
    # Only the batch job changes: the people's requests are the same.
    people = [[r for r in trace if r.cls != "batch"] for trace in (backlog, job)]
    assert people[0] == people[1]


def test_the_thrash_trace_is_two_users_alternating_between_two_models_with_room_for_one() -> None:
    trace = make_thrash_trace(37, 60)
    assert (trace.name, trace.models_max) == ("thrash", 1)
    users = [a for a in trace.actors if a.cls == "interactive"]
    assert len(users) == 2
    for user in users:
        models = [r.model for r in user.requests]
        assert len(set(models)) == 2
        assert all(a != b for a, b in itertools.pairwise(models))  # a switch every turn
        assert all(1.0 <= r.wait_s <= 4.0 for r in user.requests[1:])
        assert sum(r.wait_s for r in user.requests) > 60  # still asking when the window closes
    assert users[0].requests[0].model != users[1].requests[0].model
    (batch,) = [a for a in trace.actors if a.cls == "batch"]
    assert {r.model for r in batch.requests} == {users[0].requests[0].model}  # on one of them
    assert 0 < len(batch.requests) <= 20  # a small job


def test_the_fair_trace_is_a_heavy_and_a_light_key_of_one_class_on_one_model() -> None:
    trace, alone = make_fair_trace(37, 60), make_fair_trace(37, 60, heavy=False)
    assert (trace.name, trace.parallel) == ("fair", 2)
    assert len({r.model for r in trace.requests()}) == 1
    assert {a.cls for a in trace.actors} == {"interactive"}
    heavy = [a for a in trace.actors if a.key == "heavy"]
    assert len(heavy) == 6  # six requests in flight, each lane back to back
    assert all(r.body["max_tokens"] == 256 and r.wait_s == 0 for a in heavy for r in a.requests)
    (light,) = [a for a in trace.actors if a.key == "light"]
    assert {r.body["max_tokens"] for r in light.requests} == {32}
    times = [r.at_s for r in light.requests]
    assert all(b - a == 3.0 for a, b in itertools.pairwise(times))  # type: ignore[operator]
    # Alone: the light key's same requests, and nothing else.
    assert [a.key for a in alone.actors] == ["light"]
    assert alone.actors[0] == light


def test_the_batch_job_can_come_in_bursts_of_ten() -> None:
    backlog, bursts = make_trace(37, 60), make_trace(37, 60, bursts=10)
    lanes = [a for a in bursts.actors if a.cls == "batch"]
    assert len(lanes) == 10
    # Each burst: one request of every lane, all due at once, BURST_EVERY_S apart.
    times = {tuple(r.at_s for r in lane.requests) for lane in lanes}
    assert len(times) == 1
    (due,) = times
    assert all(b - a == BURST_EVERY_S for a, b in itertools.pairwise(due))  # type: ignore[operator]
    people = [[r for r in t.requests() if r.cls != "batch"] for t in (backlog, bursts)]
    assert people[0] == people[1]


def test_the_fair_trace_runs_the_light_key_alone_and_corral_under_fifo_too() -> None:
    args = argparse.Namespace(seed=37, window=12.0, batch_per_second=10.0, batch_bursts=0)
    runs = traces(argparse.Namespace(**vars(args), trace="fair"))
    assert [(suffix, flags) for suffix, _, flags in runs] == [
        ("", []),
        (" alone", []),
        (" fifo", ["--schedule", "fifo"]),
    ]
    assert [trace.name for _, trace, _ in runs] == ["fair"] * 3
    assert [len(trace.actors) for _, trace, _ in runs] == [7, 1, 7]
    for name in ("team", "thrash"):
        ((suffix, trace, flags),) = traces(argparse.Namespace(**vars(args), trace=name))
        assert (suffix, trace.name, flags) == ("", name, [])
