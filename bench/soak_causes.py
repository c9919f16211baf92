"""Why the soak (``bench/soak.py``, docs/benchmarks.md) got each error it got.

Every answer that is not a 2xx, every SSE error event inside a 200, and every worker exit the
router logs as an error is matched here by what was asked, its status and its message. Each
cause is something the soak itself brings about on purpose or by its random choices; anything
that matches none is unexplained, and an unexplained error fails the soak.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CAUSES", "Cause", "classify"]


@dataclass(frozen=True)
class Cause:
    name: str  # as the report prints it
    kinds: tuple[str, ...]  # what the soak was doing: an action, "replay" or "worker_exit"
    status: int | str
    message: re.Pattern[str]


def _cause(name: str, kinds: tuple[str, ...], status: int | str, message: str) -> Cause:
    return Cause(name, kinds, status, re.compile(message))


_GENERATIONS = ("stream", "cancel", "resume")
CAUSES = [
    _cause("bad body: malformed JSON, sent on purpose", ("bad_body",), 400,
           r"^invalid JSON in request body"),
    _cause("bad body: unknown model, sent on purpose", ("bad_body",), 404,
           r"^model 'no-such-model' not found"),
    _cause("bad body: over --max-body, sent on purpose", ("bad_body",), 413,
           r"^request body is larger than the router's limit"),
    _cause("unload of a model that was not running (picked at random)", ("unload",), 400,
           r"^model is not running$"),
    _cause("the soak's own unload stopped the model's load", _GENERATIONS, 503,
           r"^model '[^']+' was stopped before it finished loading$"),
    _cause("the soak's own unloads stopped the model twice as the request reached it",
           _GENERATIONS, 503, r"^model '[^']+' was stopped before it took the request$"),
    _cause("replay after its worker stopped (evicted or unloaded): a stream lives in its "
           "worker", ("replay",), 404, r"^Stream not found: model '[^']+' stopped$"),
    _cause("replay of a session whose POST failed: the soak's unload stopped the load",
           ("replay",), 404,
           r"^Stream not found: model '[^']+' was stopped before it finished loading$"),
]  # fmt: skip


def classify(kind: str, status: int | str, message: str) -> Cause | None:
    """The cause of one error, or None: unexplained."""
    return next(
        (
            cause
            for cause in CAUSES
            if kind in cause.kinds and status == cause.status and cause.message.search(message)
        ),
        None,
    )
