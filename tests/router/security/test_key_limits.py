"""The key file's grammar and the per-key limits, as plain functions with a hand-moved clock."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from router.cli.main import parse_serve_args
from router.scheduling.waiting_line import Priority
from router.security.api_keys import (
    ApiKey,
    ApiKeyFileError,
    KeyScope,
    admin_only,
    key_id,
    load_api_keys,
    needs_admin,
)
from router.security.callers import queue_caller, remember_key, remember_star_page
from router.security.guard import ApiKeyAuth, ApiKeyMiddleware, KeyForbidden
from router.security.rate_limits import (
    SESSIONS_IN_FLIGHT,
    KeyLimiter,
    LimitExceeded,
    SessionLimits,
    TokenBucket,
)
from tests.support.fakes.fake_clock import FakeClock

SECRET = "s3cret-Key-that-must-not-show"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("k", ApiKey("k")),
        ("k admin", ApiKey("k", KeyScope.ADMIN)),
        ("k inference", ApiKey("k", KeyScope.INFERENCE)),
        ("k  inference\tconcurrency=2 rpm=60", ApiKey("k", KeyScope.INFERENCE, 2, 60)),
        ("k rpm=5", ApiKey("k", KeyScope.ADMIN, rpm=5)),
        ("sk-abc== concurrency=3 inference", ApiKey("sk-abc==", KeyScope.INFERENCE, 3)),
        ("k inference class=batch", ApiKey("k", KeyScope.INFERENCE, priority=Priority.BATCH)),
        ("k class=interactive rpm=2", ApiKey("k", rpm=2, priority=Priority.INTERACTIVE)),
        ("k inference cache=team-1.a", ApiKey("k", KeyScope.INFERENCE, cache_group="team-1.a")),
    ],
)
def test_key_lines(tmp_path: Path, line: str, expected: ApiKey) -> None:
    path = tmp_path / "keys"
    path.write_text(f"# comment\n\n{line}\n")
    assert load_api_keys([], [path]) == (expected,)


@pytest.mark.parametrize(
    "rest",
    [
        "bogus",
        "rpm=0",
        "rpm=-1",
        "rpm=x",
        "concurrency=",
        "concurrency=1.5",
        "admin inference",
        "rpm=1 rpm=2",
        "burst=3",
        "Inference",
        "class=urgent",
        "class=batch class=batch",
        "class=",
        "cache=",
        "cache=a:b",
        "cache=team cache=lab",
    ],
)
def test_a_malformed_line_stops_startup_naming_the_line_not_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rest: str
) -> None:
    path = tmp_path / "keys"
    path.write_text(f"# line 1\ngood-key inference\n{SECRET} {rest}\n")
    with pytest.raises(SystemExit) as exit_info:
        parse_serve_args(["--api-key-file", str(path)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"API key file {path}, line 3:" in err
    assert SECRET not in err


@pytest.mark.parametrize(
    "line", ["inference", "rpm=5", "concurrency=2 inference", "admin", "class=batch", "cache=t"]
)
def test_a_line_without_its_key_is_refused(tmp_path: Path, line: str) -> None:
    path = tmp_path / "keys"
    path.write_text(f"{line}\n")
    with pytest.raises(ApiKeyFileError, match="line 1: the line starts with an option"):
        load_api_keys([], [path])


def test_the_same_key_twice(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_text(f"{SECRET} inference\n{SECRET} inference\n")
    assert load_api_keys([], [path]) == (ApiKey(SECRET, KeyScope.INFERENCE),)
    # Given as an admin --api-key as well: which one was meant is unclear.
    with pytest.raises(ApiKeyFileError) as error:
        load_api_keys([SECRET], [path])
    assert key_id(SECRET) in str(error.value)
    assert SECRET not in str(error.value)


def _scope(opt: dict[str, Any] | None, query: bytes = b"", key: str | None = None) -> Any:
    class Handler:
        def __init__(self) -> None:
            self.opt = opt or {}

    headers = [(b"authorization", f"Bearer {key}".encode())] if key else []
    return {
        "type": "http",
        "method": "GET",
        "route_handler": Handler(),
        "path_template": "/anything",
        "query_string": query,
        "headers": headers,
    }


@pytest.mark.parametrize(
    ("opt", "query", "expected"),
    [
        (None, b"", False),
        (admin_only(), b"", True),
        (admin_only(when_query="reload"), b"", False),
        (admin_only(when_query="reload"), b"reload=", False),
        (admin_only(when_query="reload"), b"reload=1", True),
        (admin_only(when_query="reload"), b"a=b&reload=0", True),  # any value: the handler's rule
        (admin_only(when_query="reload"), b"reloaded=1", False),
    ],
)
def test_needs_admin(opt: dict[str, Any] | None, query: bytes, expected: bool) -> None:
    assert needs_admin(_scope(opt, query)) is expected


def test_the_bucket_refills_continuously_up_to_a_minute() -> None:
    clock = FakeClock()
    bucket = TokenBucket(2, clock)
    assert (bucket.take(), bucket.take()) == (0.0, 0.0)  # a burst of a minute's worth
    assert bucket.take() == pytest.approx(30.0)  # 2 a minute: one every 30 s
    clock.advance(15)
    assert bucket.take() == pytest.approx(15.0)  # half a token has come back
    clock.advance(15)
    assert bucket.take() == 0.0
    clock.advance(3600)  # an idle hour fills the bucket only to its capacity
    assert [bucket.take() == 0.0 for _ in range(3)] == [True, True, False]


def test_limits_refuse_with_retry_after_and_free_on_release() -> None:
    clock = FakeClock()
    limiter = KeyLimiter(ApiKey("k", KeyScope.INFERENCE, concurrency=2, rpm=3), clock)
    limiter.admit()
    limiter.admit()
    with pytest.raises(LimitExceeded) as busy:
        limiter.admit()
    assert (busy.value.retry_after, limiter.in_flight) == (1, 2)
    limiter.release()
    limiter.admit()  # the third token of the minute (the refused try spent none)
    limiter.release()
    with pytest.raises(LimitExceeded) as rate:
        limiter.admit()
    assert rate.value.retry_after == 20  # 3 a minute: the next in 20 s
    clock.advance(20)
    limiter.admit()
    assert limiter.in_flight == 2


def test_a_callers_resumable_sessions_in_flight_are_bounded_keys_or_not() -> None:
    limits = SessionLimits()
    held = [limits.admit("k1") for _ in range(SESSIONS_IN_FLIGHT)]
    with pytest.raises(LimitExceeded) as refused:
        limits.admit("k1")
    answer = refused.value.answer()
    assert (answer.status, answer.type, answer.headers) == (
        429,
        "rate_limit_error",
        {"Retry-After": "1"},
    )
    assert answer.message == "too many resumable sessions in flight for this caller (at most 4)"
    limits.admit("k2")  # another key, or without keys the user apart from other sites' pages
    limits.admit(None)
    held[0].release()
    held[0].release()  # given back once, however often released
    limits.admit("k1")
    with pytest.raises(LimitExceeded):
        limits.admit("k1")


def test_whose_places_and_sessions_a_request_counts_against() -> None:
    scope: Any = {}
    assert queue_caller(scope).share is None  # no keys, no page: the user's own tools
    remember_star_page(scope)
    assert queue_caller(scope).share == "*"  # any other site's page: all of them one caller
    remember_key(scope, ApiKey("k", KeyScope.INFERENCE))
    assert queue_caller(scope).share == key_id("k")  # a key is its own caller, page or not


def _run_middleware(
    auth: ApiKeyAuth, scope: Any, app: Callable[[], Any] | None = None
) -> list[int]:
    """Run the middleware over a fake app; returns the in-flight counts the app saw."""
    seen: list[int] = []

    async def next_app(_scope: Any, _receive: Any, _send: Any) -> None:
        key = auth.identify(_scope["headers"])
        limiter = auth.limits.for_key(key) if key is not None else None
        seen.append(limiter.in_flight if limiter is not None else -1)
        if app is not None:
            app()

    async def main() -> None:
        await ApiKeyMiddleware(auth).handle(scope, _receive, _send, next_app)

    async def _receive() -> Any:
        return {}

    async def _send(_: Any) -> None:
        return None

    anyio.run(main)
    return seen


def test_the_middleware_counts_a_request_until_it_ends_even_when_it_fails() -> None:
    clock = FakeClock()
    key = ApiKey("k", KeyScope.INFERENCE, concurrency=1)
    auth = ApiKeyAuth([key], clock)
    assert _run_middleware(auth, _scope(None, key="k")) == [1]

    def fail() -> None:
        raise RuntimeError("the app failed")

    with pytest.raises(RuntimeError):
        _run_middleware(auth, _scope(None, key="k"), fail)
    limiter = auth.limits.for_key(key)
    assert limiter is not None
    assert limiter.in_flight == 0  # released all the same
    with pytest.raises(KeyForbidden):
        _run_middleware(auth, _scope(admin_only(), key="k"))
    assert limiter.in_flight == 0
