"""W3C Trace Context's ``traceparent`` header, read by the router (a client's, to continue its
trace) and by a worker (the router's, to tag its log lines): one parser for both."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["TraceParent", "parse_traceparent"]

# version-traceid-parentid-flags; a later version may add fields after the four.
_TRACEPARENT = re.compile(rb"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$")


@dataclass(frozen=True, slots=True)
class TraceParent:
    trace_id: int
    span_id: int
    flags: int

    def header(self) -> bytes:
        """The header's value, version 00."""
        return f"00-{self.trace_id:032x}-{self.span_id:016x}-{self.flags:02x}".encode()


def parse_traceparent(value: bytes | None) -> TraceParent | None:
    """The header's ids, or ``None`` for a missing or invalid one (the specification's rules:
    version ``ff`` and all-zero ids are invalid; a version 00 header has exactly four fields)."""
    found = _TRACEPARENT.match(value.strip()) if value else None
    if found is None:
        return None
    version, trace, span, flags, rest = found.groups()
    if version == b"ff" or (version == b"00" and rest) or not int(trace, 16) or not int(span, 16):
        return None
    return TraceParent(int(trace, 16), int(span, 16), int(flags, 16))
