"""The one thread that owns the llama context.

Everything that touches the model runs on this thread. Between two batching steps it runs the
calls that arrived (tokenize, apply a template, queue a generation); each step's output for all
streams reaches the event loop in a single ``call_soon_threadsafe``, not one hop per token. When
no generation runs, before it waits for work, it hands the slot states that requests left
behind to the disk tier, one at a time while nothing else has come.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from corral.children.protocol import ThreadsCommand
from worker.engine.generation import Failed, Finished, Generation, GenerationEvent
from worker.engine.thread_count import ThreadCount

if TYPE_CHECKING:
    from worker.engine.model import LoadedModel

__all__ = ["Cancelled", "Engine"]

T = TypeVar("T")


class Cancelled(Exception):
    """The worker is stopping while a request still waited for it."""


class _Call(Generic[T]):
    def __init__(
        self,
        fn: Callable[[], T],
        loop: asyncio.AbstractEventLoop,
        needs_model: bool,
        when: Callable[[], bool] | None = None,
    ) -> None:
        self.fn = fn
        self.needs_model = needs_model  # False for snapshots (metrics) that must not wake it
        self.when = when  # run only once this holds; checked again after each step
        self.future: asyncio.Future[T] = loop.create_future()
        self._loop = loop

    def ready(self) -> bool:
        return self.when is None or self.when()

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


def _raise_cancelled() -> None:
    raise Cancelled


_Outbox = list[tuple[asyncio.Queue[GenerationEvent], GenerationEvent]]


def _deliver(outbox: _Outbox) -> None:
    for mailbox, event in outbox:
        mailbox.put_nowait(event)


class Engine:
    """Runs model work on a dedicated thread; create it on the event loop it serves."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._loop = asyncio.get_running_loop()
        self._clock = clock
        # When the thread began its current job or step; None while it waits for work. A value
        # that gets old means a wedged thread: /health reports it for the router's watchdog.
        self._busy_since: float | None = None
        self._inbox: queue.SimpleQueue[_Call[Any] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._model: LoadedModel | None = None
        self._outbox: _Outbox = []
        self._threads = ThreadCount()  # the router's share of the cores (docs/protocol.md §1)

    def start(
        self,
        setup: Callable[[], LoadedModel | None],
        *,
        sleep_after: float | None = None,
        on_sleep: Callable[[], None] = lambda: None,
        wake: Callable[[LoadedModel], None] = lambda model: None,
    ) -> None:
        """Start the thread; ``setup`` loads the model on it (None when that failed).

        With ``sleep_after``, the model is put to sleep after that many idle seconds
        (``on_sleep`` reports it) and ``wake`` brings it back for the next job that needs it.
        """
        self._thread = threading.Thread(
            target=self._run, args=(setup, sleep_after, on_sleep, wake), name="llama", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._inbox.put(None)
        if self._thread is not None:
            self._thread.join()

    async def call(
        self,
        fn: Callable[[], T],
        *,
        needs_model: bool = True,
        when: Callable[[], bool] | None = None,
    ) -> T:
        """Run ``fn`` on the engine thread between two batching steps.

        ``needs_model=False`` marks a read of counters or snapshots: it does not wake a
        sleeping model. ``when`` (checked on the engine thread) defers ``fn`` until it holds,
        as llama-server defers an action on a busy slot.
        """
        job = _Call(fn, self._loop, needs_model, when)
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
        await self.call(lambda: self._require_model().batcher.submit(generation))
        try:
            while True:
                event = await mailbox.get()
                yield event
                if isinstance(event, Finished | Failed):  # the last event
                    return
        finally:
            generation.cancelled = True

    def want_threads(self, command: ThreadsCommand) -> None:
        """The router's threads command (any thread): applied before the next step or job
        (an idle engine computes nothing, so it waits for its next work)."""
        self._threads.want(command)

    def busy_seconds(self) -> float:
        """How long the thread has been inside one job or step; 0 while it waits for work."""
        since = self._busy_since  # one read: the engine thread may reset it meanwhile
        return 0.0 if since is None else max(self._clock() - since, 0.0)

    def _save_idle(self, model: LoadedModel) -> None:
        """The idle moment: states read here pause no stream (worker/cache/slot_cache.py)."""
        while self._inbox.empty():
            self._busy_since = self._clock()
            if not model.batcher.save_idle():
                return

    def _require_model(self) -> LoadedModel:
        if self._model is None:
            raise Cancelled
        return self._model

    def _run(
        self,
        setup: Callable[[], LoadedModel | None],
        sleep_after: float | None,
        on_sleep: Callable[[], None],
        wake: Callable[[LoadedModel], None],
    ) -> None:
        model = setup()
        if model is None:
            return
        self._model = model
        deferred: list[_Call[Any]] = []
        try:
            while True:
                idle = not model.batcher.busy and not deferred
                if idle and not model.sleeping:
                    self._save_idle(model)
                # Idle and awake: wait for work at most until it is time to sleep.
                timeout = sleep_after if idle and not model.sleeping else None
                while True:
                    self._busy_since = None if idle else self._clock()
                    try:
                        job = self._inbox.get(block=idle, timeout=timeout)
                    except queue.Empty:
                        if idle and timeout is not None:
                            model.sleep()
                            on_sleep()
                        break
                    idle = False
                    if job is None:
                        return
                    self._busy_since = self._clock()
                    if model.sleeping and job.needs_model:
                        wake(model)
                    self._threads.apply(model)  # between two steps: no decode runs
                    if job.ready():
                        job.run()
                    else:
                        deferred.append(job)
                self._busy_since = self._clock()
                self._threads.apply(model)
                model.batcher.step()
                for job in [job for job in deferred if job.ready()]:
                    deferred.remove(job)
                    job.run()
                if self._outbox:
                    outbox, self._outbox = self._outbox, []
                    self._loop.call_soon_threadsafe(_deliver, outbox)
        finally:
            for job in deferred:
                job.fn = _raise_cancelled
                job.run()
            if not model.sleeping:
                model.close()
