"""The one thread that owns the llama context.

Everything that touches the model runs on this thread. Between two batching steps it runs the
calls that arrived (tokenize, apply a template, queue a generation); each step's output for all
streams reaches the event loop in a single ``call_soon_threadsafe``, not one hop per token.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import AsyncGenerator, Callable
from typing import Any, Generic, TypeVar

from worker.batching import BatchEngine, Delta, Generation, GenerationEvent

__all__ = ["Cancelled", "Engine"]

T = TypeVar("T")


class Cancelled(Exception):
    """The worker is stopping while a request still waited for it."""


class _Call(Generic[T]):
    def __init__(self, fn: Callable[[], T], loop: asyncio.AbstractEventLoop) -> None:
        self.fn = fn
        self.future: asyncio.Future[T] = loop.create_future()
        self._loop = loop

    def run(self) -> None:
        try:
            result = self.fn()
        except Exception as exc:  # handed to the awaiting request, which maps it to an error
            self._loop.call_soon_threadsafe(_settle, self.future, None, exc)
        else:
            self._loop.call_soon_threadsafe(_settle, self.future, result, None)


def _settle(future: asyncio.Future[Any], value: Any, exc: BaseException | None) -> None:
    if future.done():
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(value)


_Outbox = list[tuple[asyncio.Queue[GenerationEvent], GenerationEvent]]


def _deliver(outbox: _Outbox) -> None:
    for mailbox, event in outbox:
        mailbox.put_nowait(event)


class Engine:
    """Runs model work on a dedicated thread; create it on the event loop it serves."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._inbox: queue.SimpleQueue[_Call[Any] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._batcher: BatchEngine | None = None
        self._outbox: _Outbox = []

    def start(self, setup: Callable[[], BatchEngine | None]) -> None:
        """Start the thread; ``setup`` loads the model on it and returns the batcher (or None)."""
        self._thread = threading.Thread(target=self._run, args=(setup,), name="llama", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._inbox.put(None)
        if self._thread is not None:
            self._thread.join()

    async def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the engine thread between two batching steps."""
        job = _Call(fn, self._loop)
        self._inbox.put(job)
        return await job.future

    async def generate(
        self, make: Callable[[Callable[[GenerationEvent], None]], Generation]
    ) -> AsyncGenerator[GenerationEvent, None]:
        """Queue ``make(emit)`` for generation and yield its events as they come.

        Closing the iterator (the client went away) cancels the generation: its slot is free
        again at the next step.
        """
        mailbox: asyncio.Queue[GenerationEvent] = asyncio.Queue()
        generation = make(lambda event: self._outbox.append((mailbox, event)))
        await self.call(lambda: self._require_batcher().submit(generation))
        try:
            while True:
                event = await mailbox.get()
                yield event
                if not isinstance(event, Delta):  # Finished or Failed: the last event
                    return
        finally:
            generation.cancelled = True

    def _require_batcher(self) -> BatchEngine:
        if self._batcher is None:
            raise Cancelled
        return self._batcher

    def _run(self, setup: Callable[[], BatchEngine | None]) -> None:
        batcher = setup()
        if batcher is None:
            return
        self._batcher = batcher
        try:
            while True:
                block = not batcher.busy
                while True:
                    try:
                        job = self._inbox.get(block=block)
                    except queue.Empty:
                        break
                    block = False
                    if job is None:
                        return
                    job.run()
                batcher.step()
                if self._outbox:
                    outbox, self._outbox = self._outbox, []
                    self._loop.call_soon_threadsafe(_deliver, outbox)
        finally:
            batcher.close()
