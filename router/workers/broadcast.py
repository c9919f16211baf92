"""A change signal for waiters that each re-check their own condition (docs/protocol.md §4)."""

from __future__ import annotations

import anyio

__all__ = ["Broadcast"]


class Broadcast:
    """Wakes every waiter when something changed; waiters re-check their own condition."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = anyio.Event()

    async def wait(self) -> None:
        await self._event.wait()
