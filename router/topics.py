"""Typed events between the router's services: who publishes what, and who wants it.

A service that has news (the pool: a worker exited, a worker sent its first answer; the
reloader: the catalogue was read again) publishes a small frozen event on its :class:`Topic`;
the services that care subscribe when they are built (router/services.py), in the order they
are built. Subscribers run at once, in order, on the event loop: they only note the news or
schedule work, never wait.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Topic"]

E = TypeVar("E")


class Topic(Generic[E]):
    """One kind of event and its subscribers."""

    __slots__ = ("_subscribers",)

    def __init__(self) -> None:
        self._subscribers: list[Callable[[E], None]] = []

    def subscribe(self, subscriber: Callable[[E], None]) -> None:
        self._subscribers.append(subscriber)

    def publish(self, event: E) -> None:
        for subscriber in self._subscribers:
            subscriber(event)
