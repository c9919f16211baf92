"""W3C traceparent parsing: what the router continues and the worker tags its lines with."""

from __future__ import annotations

import pytest

from corral.http.trace_context import TraceParent, parse_traceparent

GOOD = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_a_valid_header_gives_its_ids_and_is_written_back_the_same() -> None:
    parent = parse_traceparent(GOOD)
    assert parent == TraceParent(0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, 1)
    assert parent.header() == GOOD


def test_a_later_version_may_carry_more_fields() -> None:
    assert parse_traceparent(b"01" + GOOD[2:] + b"-what-comes-next") is not None


@pytest.mark.parametrize(
    "header",
    [
        None,
        b"",
        b"ff" + GOOD[2:],  # version ff is invalid
        GOOD + b"-more",  # version 00 has exactly four fields
        b"00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # zero trace id
        b"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  # zero span id
        GOOD.upper(),  # lower-case hex only
        b"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",  # short trace id
    ],
)
def test_invalid_headers_are_ignored(header: bytes | None) -> None:
    assert parse_traceparent(header) is None
