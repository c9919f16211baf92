"""What a child inherits: the environment without secrets, and the router's body limit."""

from __future__ import annotations

import pytest

from corral.children.environment import (
    DEFAULT_MAX_BODY,
    MAX_BODY_ENV,
    ROUTER_PID_ENV,
    SECRET_ENV,
    child_environment,
    max_body_from,
)


def test_children_get_no_secrets_and_the_router_pid(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SECRET_ENV:
        monkeypatch.setenv(name, "secret")
    monkeypatch.setenv("CORRAL_SOMETHING", "kept")
    env = child_environment()
    assert SECRET_ENV.isdisjoint(env)
    assert env["CORRAL_SOMETHING"] == "kept"
    assert env[ROUTER_PID_ENV].isdigit()


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, DEFAULT_MAX_BODY), ("", DEFAULT_MAX_BODY), ("1K", 1024), ("16M", 16 << 20)],
)
def test_the_body_limit_a_worker_inherits(value: str | None, expected: int) -> None:
    assert max_body_from({} if value is None else {MAX_BODY_ENV: value}) == expected
