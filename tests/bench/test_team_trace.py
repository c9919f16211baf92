"""bench/team_trace.py: the trace both routers replay is the same for the same seed."""

from __future__ import annotations

import msgspec

from bench.team_trace import CLASSES, MODELS, Trace, make_trace


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
