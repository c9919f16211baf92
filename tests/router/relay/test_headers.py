"""A relayed answer's head (router/relay/headers.py): only the APIs' content types, with
``nosniff`` and a sandboxing CSP, whatever the upstream sent."""

from __future__ import annotations

import pytest

from router.relay.headers import guarded_head

GUARDS = [
    (b"x-content-type-options", b"nosniff"),
    (b"content-security-policy", b"sandbox; default-src 'none'"),
]


@pytest.mark.parametrize(
    "media",
    [
        b"application/json",
        b"text/event-stream; charset=utf-8",
        b"text/plain; version=0.0.4; charset=utf-8",
        b"Application/JSON",
        b"application/x-ndjson",
    ],
)
def test_the_apis_types_are_kept_as_sent(media: bytes) -> None:
    head = guarded_head([(b"content-type", media), (b"x-request-id", b"r1")])
    assert head == [(b"content-type", media), (b"x-request-id", b"r1"), *GUARDS]


@pytest.mark.parametrize(
    "types",
    [
        [b"text/html; charset=utf-8"],
        [b"image/svg+xml"],
        [b"application/xhtml+xml"],
        [b"text/plainx"],
        [],  # none: a browser would sniff one
        [b"text/plain", b"text/html"],  # two: browsers differ on which counts
    ],
)
def test_any_other_type_is_bytes_to_save(types: list[bytes]) -> None:
    head = guarded_head([(b"content-type", media) for media in types])
    assert head == [(b"content-type", b"application/octet-stream"), *GUARDS]


def test_the_upstreams_own_guards_are_replaced() -> None:
    sent = [(b"content-type", b"application/json"), (b"content-security-policy", b"default-src *")]
    assert guarded_head(sent) == [(b"content-type", b"application/json"), *GUARDS]
