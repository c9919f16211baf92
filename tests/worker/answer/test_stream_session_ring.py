"""A resumable stream's byte ring (worker.answer.stream_sessions), without a server."""

from __future__ import annotations

import asyncio

import pytest

from worker.answer.stream_sessions import OffsetLost, StreamSession, StreamSessions, StreamSettings


async def _read_all(session: StreamSession, offset: int) -> bytes:
    return b"".join([chunk async for chunk in session.read(offset)])


def test_the_ring_keeps_at_most_max_bytes_and_counts_what_it_dropped() -> None:
    session = StreamSession("c", max_bytes=8)
    session.append(b"abcdef")
    session.append(b"ghijkl")
    assert session.total_bytes == 12
    assert session.dropped == 4
    session.finish()
    assert asyncio.run(_read_all(session, 4)) == b"efghijkl"


def test_a_reader_resumes_from_any_offset_still_in_the_ring() -> None:
    session = StreamSession("c", max_bytes=100)
    session.append(b"data: 1\n\n")
    session.append(b"data: 2\n\n")
    session.finish()
    assert asyncio.run(_read_all(session, 9)) == b"data: 2\n\n"
    assert asyncio.run(_read_all(session, 18)) == b""


def test_an_offset_the_ring_dropped_is_lost() -> None:
    session = StreamSession("c", max_bytes=4)
    session.append(b"123456")
    with pytest.raises(OffsetLost):
        session.check_offset(1)
    session.check_offset(2)


def test_a_live_reader_waits_for_bytes_appended_after_it_caught_up() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        session = StreamSession("c", max_bytes=100)
        session.append(b"first ")
        reader = session.read(0)
        assert await anext(reader) == b"first "
        # Runs only once the reader below has caught up and waits for more.
        loop.call_soon(session.append, b"second")
        assert await anext(reader) == b"second"
        loop.call_soon(session.finish)
        assert await anext(reader, None) is None

    asyncio.run(scenario())


def test_describe_reports_progress_and_completion() -> None:
    session = StreamSession("conv::model", max_bytes=100)
    session.append(b"xyz")
    assert session.describe()["is_done"] is False
    session.finish()
    described = session.describe()
    assert (described["total_bytes"], described["is_done"]) == (3, True)


def test_lookup_answers_only_the_ids_asked_and_their_model_keys() -> None:
    sessions = StreamSessions(StreamSettings())
    for key in ("a", "a::m1", "b"):
        sessions.open(key)
    found = sorted(str(s["conversation_id"]) for s in sessions.lookup(["a"]))
    assert found == ["a", "a::m1"]


def test_sweep_forgets_only_sessions_done_for_longer_than_the_ttl() -> None:
    sessions = StreamSessions(StreamSettings(ttl=10))
    done, running = sessions.open("done"), sessions.open("running")
    done.finish()
    sessions.sweep(now=done.completed_at + 9)
    assert sessions.get("done") is done
    sessions.sweep(now=done.completed_at + 10)
    assert sessions.get("done") is None
    assert sessions.get("running") is running


def test_opening_a_key_again_replaces_and_finishes_the_old_session() -> None:
    sessions = StreamSessions(StreamSettings())
    old = sessions.open("k")
    new = sessions.open("k")
    assert old.done
    assert sessions.get("k") is new
