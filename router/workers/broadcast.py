"""A change signal for waiters that each re-check their own condition (docs/protocol.md §4)."""

from __future__ import annotations

import anyio

__all__ = ["Broadcast"]


class Broadcast:
    """Wakes every waiter when something changed; waiters re-check their own condition."""

    def __init__(self) -> None:
        # Made by the first waiter after a notify: every request's end notifies (a slot is
        # free), and almost always nobody waits, so most notifies have no event to set or make.
        self._event: anyio.Event | None = None

    def notify(self) -> None:
        if self._event is not None:
            self._event.set()
            self._event = None

    async def wait(self) -> None:
        if self._event is None:
            self._event = anyio.Event()
        await self._event.wait()
