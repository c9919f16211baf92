"""Models that may not start for a while: a removal is deleting the files they load.

``DELETE /models`` (:func:`router.api.downloads.remove_cache_model`) stops every model whose
files resolve to what it deletes, then deletes, then reloads the catalogue. Between the stop and
the end of that reload none of them may start again: a worker started then would load a file as
it is unlinked, or keep running on one nobody can see any more (docs/security.md, "Local users
and processes"). Requests for them wait for the reload; ``POST /models/load`` is refused.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from router.workers.broadcast import Broadcast

__all__ = ["LoadHolds"]


class LoadHolds:
    """Canonical model names whose loads wait, each counted as often as it is held."""

    def __init__(self, changed: Broadcast) -> None:
        self._held: Counter[str] = Counter()
        self._changed = changed  # the pool's: waiting requests look again when a hold ends

    def held(self, name: str) -> bool:
        return self._held[name] > 0

    @contextmanager
    def holding(self, names: Iterable[str]) -> Iterator[None]:
        """No model of these names starts until the block has ended."""
        names = list(names)
        self._held.update(names)
        try:
            yield
        finally:
            self._held.subtract(names)
            self._held = +self._held  # drops the names no longer held
            self._changed.notify()
