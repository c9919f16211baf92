"""The request history and the model timeline: bounded, and each request's state follows its
model's load (router/observe/requests.py, router/observe/activity.py)."""

from __future__ import annotations

from router.observe.activity import Timeline
from router.observe.events import EventBus
from router.observe.requests import (
    RequestHistory,
    RequestRecord,
    begin_request,
    close_record,
    current_record,
    open_record,
)


def _request(history: RequestHistory, model: str, key: str | None = None) -> RequestRecord:
    record, token = open_record("/v1/chat/completions", history)
    begin_request(model, key, "/v1/chat/completions", "00-trace-01")
    assert current_record() is record
    close_record(token)
    return record


def test_only_requests_for_a_model_join_and_the_finished_are_bounded() -> None:
    history = RequestHistory(kept=3)
    told: list[str] = []  # what the scheduler hears, to charge each request's tokens
    history.finished.subscribe(lambda record: told.append(record.id))
    _, token = open_record("/models", history)  # never names a model: not in the history
    close_record(token)
    records = []
    for _ in range(5):
        record, token = open_record("/v1/completions", history)
        begin_request("alpha", "k1", "/v1/completions")
        close_record(token)
        records.append(record)
    assert history.in_flight == 5
    for record in records:
        history.finish(record)
    assert history.in_flight == 0
    assert [r.id for r in history.records()] == [r.id for r in reversed(records[2:])]
    history.finish(records[0])  # once only
    assert told == [r.id for r in records]


def test_a_request_waiting_for_a_load_shows_loading_then_queued_then_prompt() -> None:
    history = RequestHistory()
    bus = EventBus()
    timeline = Timeline(history)
    bus.listen(timeline.on_event)
    early = _request(history, "alpha")
    bus.publish("alpha", "status_change", {"status": "loading"})
    late = _request(history, "alpha")  # arrives while the load runs
    other = _request(history, "beta")
    assert [early.state, late.state, other.state] == ["loading", "loading", "queued"]
    bus.publish("alpha", "status_change", {"status": "loading", "progress": {"value": 0.5}})
    bus.publish("alpha", "status_change", {"status": "loaded"})
    assert early.state == "queued"
    assert early.load_ended is not None
    early.dispatched_now()
    early.chunk()
    assert early.state == "generating"
    assert early.trace_parent == "00-trace-01"
    assert [e.kind for e in timeline.events()] == ["load", "loaded"]  # one per load


def test_a_workers_restore_notes_show_restoring_between_the_hand_over_and_the_first_token() -> None:
    history = RequestHistory()
    record, late = _request(history, "alpha"), _request(history, "alpha")
    for one in (record, late):
        one.dispatched_now()
    history.restore_noted({"request": record.id})
    assert (record.state, late.state) == ("restoring", "prompt")
    history.restore_noted({"request": record.id, "done": True, "tokens": 40})
    assert record.state == "prompt"
    late.chunk()  # a note read after the first token keeps the state, and tells the times
    history.restore_noted({"request": late.id})
    history.restore_noted({"request": "r-gone", "done": True})  # another router's
    history.finish(late)
    history.restore_noted({"request": late.id, "done": True})  # read after the answer's end
    history.restore_noted({"request": 7})  # not a note: ignored
    assert late.state == "generating"
    assert (record.restore_started is None, late.restore_started is None) == (False, False)
    assert (record.restore_ended is None, late.restore_ended is None) == (False, False)


def test_the_timeline_tells_evictions_sleeps_wakes_and_crashes() -> None:
    timeline = Timeline(RequestHistory())
    bus = EventBus()
    bus.listen(timeline.on_event)
    for status in ("loading", "loaded", "sleeping", "loaded"):
        bus.publish("alpha", "status_change", {"status": status})
    timeline.evicted("alpha")
    bus.publish("alpha", "status_change", {"status": "unloaded", "exit_code": 0})
    bus.publish("beta", "status_change", {"status": "loading"})
    bus.publish("beta", "status_change", {"status": "unloaded", "exit_code": 1, "reason": "oom"})
    bus.publish("gamma", "status_change", {"status": "loaded"})
    bus.publish("gamma", "status_change", {"status": "unloaded", "exit_code": 139})
    bus.publish("gamma", "model_status", {"status": "loading"})  # not a status change
    kinds = [(e.model, e.kind, e.detail) for e in timeline.events()]
    assert kinds == [
        ("alpha", "load", None),
        ("alpha", "loaded", None),
        ("alpha", "sleep", None),
        ("alpha", "wake", None),
        ("alpha", "evicted", None),
        ("beta", "load", None),
        ("beta", "load_failed", "oom"),
        ("gamma", "loaded", None),
        ("gamma", "crash", "exit code 139"),
    ]
