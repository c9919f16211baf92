"""Model events for ``GET /models/sse`` (docs/protocol.md §3), with upstream's names and payloads.

Publishing never blocks: each subscriber has a bounded buffer, and a subscriber too slow to keep
up loses its oldest events rather than stalling the router. Listeners (the activity view's
timeline, router/observe/timeline.py) are called at once, in order, and only note the event.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import anyio
import msgspec

__all__ = ["EventBus", "ModelEvent", "Subscription"]

_BUFFER = 1024


class ModelEvent(msgspec.Struct, omit_defaults=True):
    model: str
    event: str
    data: dict[str, Any] | None = None


class Subscription:
    def __init__(self) -> None:
        self._events: deque[ModelEvent] = deque(maxlen=_BUFFER)
        self._arrived = anyio.Event()

    def push(self, event: ModelEvent) -> None:
        self._events.append(event)
        self._arrived.set()

    async def next_batch(self, wait_at_most: float) -> list[ModelEvent]:
        """Events since the last call; empty after ``wait_at_most`` seconds without any."""
        with anyio.move_on_after(wait_at_most):
            await self._arrived.wait()
        self._arrived = anyio.Event()
        batch = list(self._events)
        self._events.clear()
        return batch


class EventBus:
    def __init__(self) -> None:
        self._subscribers: set[Subscription] = set()
        self._listeners: list[Callable[[ModelEvent], None]] = []

    def publish(self, model: str, event: str, data: dict[str, Any] | None = None) -> None:
        message = ModelEvent(model, event, data)
        for subscriber in self._subscribers:
            subscriber.push(message)
        for listener in self._listeners:
            listener(message)

    def listen(self, listener: Callable[[ModelEvent], None]) -> None:
        """Call ``listener`` with every event from now on, as it is published."""
        self._listeners.append(listener)

    def subscribe(self) -> Subscription:
        subscription = Subscription()
        self._subscribers.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscribers.discard(subscription)
