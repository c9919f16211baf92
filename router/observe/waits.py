"""A log line for each request that waited long for its model: who asked, and how long.

A request waits when its model loads, when another model must be evicted first, or when the
model's slots are taken by others (docs/serving.md, "Scheduling"). The access line says how
long a request took; this says how much of that was the wait, and whose request it was (the
key's id and class), so an operator can tell a slow model from a busy box. Subscribed to the
relay's ``dispatched`` event (router/services.py), after the record notes the dispatch.
"""

from __future__ import annotations

import structlog

from router.observe.requests import current_record

__all__ = ["WAIT_LOGGED", "note_wait"]

_log = structlog.get_logger("corral.queue")
# Seconds: a shorter wait is the ordinary case, and a line for it would double the access log.
WAIT_LOGGED = 1.0


def note_wait() -> None:
    """The request being handled was dispatched: log its wait if it was long."""
    record = current_record()
    if record is None or record.dispatched is None:
        return
    waited = record.dispatched - record.received
    if waited >= WAIT_LOGGED:
        _log.info(
            "request waited",
            model=record.model,
            key=record.key_id,
            klass=record.klass,
            waited_s=round(waited, 3),
            loaded=record.load_started is not None,  # its model was loaded for it
        )
