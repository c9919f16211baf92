"""The one thread that owns the llama context.

Everything that touches the model runs on this thread, in arrival order: short calls (tokenize,
a whole non-streaming generation) run to completion; streams advance one chunk per turn, and any
calls that arrived meanwhile run between two chunks. Results reach the event loop through
``call_soon_threadsafe``, so no event-loop thread ever blocks on the model.

This is the walking-skeleton engine: one sequence at a time through llama-cpp-python's high-level
API. Continuous batching replaces the stream scheduling, not this shape.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Generic, TypeVar

import structlog

__all__ = ["Cancelled", "Engine"]

T = TypeVar("T")
_log = structlog.get_logger("corral.worker.engine")


class Cancelled(Exception):
    """The request's client went away, or the worker is stopping."""


class _Call(Generic[T]):
    def __init__(self, fn: Callable[[threading.Event], T], loop: asyncio.AbstractEventLoop) -> None:
        self.fn = fn
        self.cancel = threading.Event()
        self.future: asyncio.Future[T] = loop.create_future()
        self._loop = loop

    def run(self) -> None:
        if self.cancel.is_set():  # its client left while it waited its turn
            return
        try:
            result = self.fn(self.cancel)
        except Exception as exc:  # handed to the awaiting request, which maps it to an error
            self._loop.call_soon_threadsafe(_settle_exception, self.future, exc)
        else:
            self._loop.call_soon_threadsafe(_settle_result, self.future, result)


class _End:
    pass


_END = _End()


class _Stream(Generic[T]):
    def __init__(
        self, fn: Callable[[threading.Event], Iterator[T]], loop: asyncio.AbstractEventLoop
    ) -> None:
        self.fn = fn
        self.cancel = threading.Event()
        self.items: asyncio.Queue[T | _End | BaseException] = asyncio.Queue()
        self._loop = loop
        self._iterator: Iterator[T] | None = None
        self._produced = 0

    def _post(self, item: T | _End | BaseException) -> None:
        self._loop.call_soon_threadsafe(self.items.put_nowait, item)

    def step(self) -> bool:
        """Advance by one chunk; returns False once the stream is over."""
        if self.cancel.is_set():
            self.close()
            return False
        try:
            if self._iterator is None:
                self._iterator = self.fn(self.cancel)
            self._post(next(self._iterator))
            self._produced += 1
            return True
        except StopIteration:
            self._post(_END)
        except Exception as exc:
            self._post(exc)
        return False

    def close(self) -> None:
        close = getattr(self._iterator, "close", None)
        if close is not None:
            close()
        _log.info("generation cancelled", chunks=self._produced)
        self._post(Cancelled())


def _settle_result(future: asyncio.Future[T], value: T) -> None:
    if not future.done():
        future.set_result(value)


def _settle_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


class Engine:
    """Runs model work on a dedicated thread; create it on the event loop it serves."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._inbox: queue.SimpleQueue[_Call[Any] | _Stream[Any] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def start(self, setup: Callable[[], bool]) -> None:
        """Start the thread; ``setup`` (the model load) runs on it first and says if it worked."""
        self._thread = threading.Thread(target=self._run, args=(setup,), name="llama", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._inbox.put(None)
        if self._thread is not None:
            self._thread.join()

    async def call(self, fn: Callable[[threading.Event], T]) -> T:
        """Run ``fn(cancel)`` on the engine thread; cancelling the await sets ``cancel``."""
        job = _Call(fn, self._loop)
        self._inbox.put(job)
        try:
            return await asyncio.shield(job.future)
        except asyncio.CancelledError:
            job.cancel.set()
            raise

    async def stream(self, fn: Callable[[threading.Event], Iterator[T]]) -> AsyncIterator[T]:
        """Yield the items of ``fn(cancel)`` as the engine thread produces them.

        Closing the generator (the client went away) cancels the work within one chunk.
        """
        job: _Stream[T] = _Stream(fn, self._loop)
        self._inbox.put(job)
        try:
            while True:
                item = await job.items.get()
                if isinstance(item, _End):
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            job.cancel.set()

    def _run(self, setup: Callable[[], bool]) -> None:
        if not setup():
            return
        waiting: deque[_Stream[Any]] = deque()
        active: _Stream[Any] | None = None
        while True:
            block = active is None and not waiting
            while True:
                try:
                    job = self._inbox.get(block=block)
                except queue.Empty:
                    break
                block = False
                if job is None:
                    for stream in (active, *waiting):
                        if stream is not None:
                            stream.close()
                    return
                if isinstance(job, _Call):
                    job.run()
                else:
                    waiting.append(job)
            if active is None and waiting:
                active = waiting.popleft()
            if active is not None and not active.step():
                active = None
