"""Warm spare workers (``--models-spare N``): the next load skips the worker's start-up.

docs/protocol.md §1 (spare workers). :class:`SpareWorkers` is a
:class:`~router.workers.launcher.WorkerLauncher`: the worker pool launches workers through it as
through any launcher, and when a warm spare is there (``python -m worker --spare``, imports
done, no model) it is handed the worker's flags instead of a new process being started. The
spare's supervisor never knows the difference. A replacement is started once the handed-over
worker has sent the first bytes of an answer (:meth:`SpareWorkers.answered`, which the router
calls from the worker pool's answer listeners) or has exited, so that its start-up never
competes with the load it was kept for, nor with the first prompt's processing (on 2 cores a
Python start-up beside a load made the first token 0.2-0.4 s later); the spare lowers its own
priority while it imports. A model loaded with nothing asking it (``POST /models/load``) keeps
the spare unreplaced until it answers or exits.

A worker that began as a spare comes back as one when it is stopped while fewer than
``count`` spares are warm: its stop sends the release command instead of the exit command
(:meth:`_Spare.send_exit`), the worker closes its model as it would before exiting and says it
is a spare again, and the model's supervisor sees its child end. In a swap the next model then
loads in the process the evicted one leaves, where a spare started at the previous swap would
still be importing.

Spares are not models: they are not in the pool, so they are never listed, never counted by
``--models-max`` and never picked for eviction. With ``--models-memory-max`` they count at their
measured size (:class:`~router.capacity.memory_budget.MemoryBudget`), and a spare is only started
when
it fits next to the running models: it never makes a model wait or be evicted.
"""

from __future__ import annotations

import signal
from collections import deque
from collections.abc import Callable, Mapping, Sequence

import anyio
import structlog
from anyio.abc import TaskGroup

from corral.children.environment import child_environment
from corral.children.protocol import SPARE_STATE, ChildLine, LogLine, StateMessage
from corral.children.worker_key import WORKER_KEY_ENV
from router.capacity.memory_budget import MemoryBudget
from router.workers.child_logs import relay_log_line
from router.workers.launcher import WORKER_COMMAND, ChildProcess, WorkerLauncher, process_rss
from router.workers.pool import WorkerPool

__all__ = ["SPARE_ARGV", "SpareWorkers"]

_log = structlog.get_logger("corral.spares")
SPARE_ARGV = (*WORKER_COMMAND, "--spare")
# Spares that die before they are warm, in a row, before the router stops starting them: a
# broken installation must not make it spawn processes for ever.
_GIVE_UP_AFTER = 3


class _Spare:
    """One spare process; once handed over, the :class:`ChildProcess` of the model's worker."""

    def __init__(self, process: ChildProcess, owner: SpareWorkers) -> None:
        self.pid = process.pid
        self.warm = False
        self.handed_over = False
        self.releasing = False  # asked to release its model and be a spare again
        self.served = 0  # models it was handed
        self._process = process
        self._owner = owner
        self._used = False  # the worker it became answered, or it ended: a replacement may start
        self._pending: deque[ChildLine] = deque()  # lines between the handover and pump()
        self._on_line: Callable[[ChildLine], None] | None = None
        # Ends the model's use of the process: it exited, or it released the model.
        self._detached = anyio.Event()
        self._returncode = 0
        self._last_log: deque[str] = deque(maxlen=1)

    async def watch(self) -> int:
        """Read the process for its whole life (as a spare, then as a worker, and so on)."""
        try:
            self._returncode = await self._process.pump(self._line)
        finally:
            self._detached.set()
            self.used_now()
        return self._returncode

    def _line(self, line: ChildLine) -> None:
        if self.handed_over:
            if self.releasing and line == StateMessage(SPARE_STATE):
                self._released()
            elif self._on_line is None:
                self._pending.append(line)
            else:
                self._on_line(line)
        elif isinstance(line, StateMessage) and line.state == SPARE_STATE:
            self.warm = True
            _log.info("spare worker ready", pid=self.pid)
            self._owner.warmed()
        elif isinstance(line, LogLine):
            relay_log_line(line.text, model="spare", source="worker", last_error=self._last_log)

    def _released(self) -> None:
        self.handed_over = self.releasing = self._used = False
        self._on_line = None
        self._pending.clear()
        self.warm = True
        self._detached.set()  # the model's supervisor sees its worker end, with code 0
        self._owner.came_back(self)

    def used_now(self) -> None:
        if self.handed_over and not self._used:
            self._used = True
            self._owner.fill()

    async def hand_over(self, argv: Sequence[str], key: str) -> None:
        self.handed_over = True
        self.served += 1
        self._detached = anyio.Event()
        await self._process.send_load(argv, key)

    # --- ChildProcess, for the supervisor of the model it became ------------------------------

    async def pump(self, on_line: Callable[[ChildLine], None]) -> int:
        while self._pending:
            on_line(self._pending.popleft())
        self._on_line = on_line
        await self._detached.wait()
        return self._returncode

    async def send_exit(self) -> None:
        """The model's stop: the worker releases its model instead of exiting when the spares
        want it back (docs/protocol.md §1): a swap's next load needs no new process."""
        if self.handed_over and not self.releasing and self._owner.take_back():
            self.releasing = True
            await self._process.send_release()
        else:
            await self._process.send_exit()

    async def send_load(self, argv: Sequence[str], key: str) -> None:
        await self._process.send_load(argv, key)

    async def send_release(self) -> None:
        await self._process.send_release()

    async def send_threads(self, threads: int, threads_batch: int) -> None:
        if self.handed_over and not self.releasing:  # a spare has no context to set
            await self._process.send_threads(threads, threads_batch)

    def signal_group(self, sig: signal.Signals) -> None:
        self._process.signal_group(sig)

    def resident(self) -> int | None:
        return self._process.resident()


class SpareWorkers:
    """Keeps ``count`` spare workers started; launches workers, through a spare when it can."""

    def __init__(
        self,
        launcher: WorkerLauncher,
        count: int,
        task_group: TaskGroup,
    ) -> None:
        self._launcher = launcher
        self._count = count
        self._tasks = task_group
        # Whether one more spare fits the memory budget, given what the spares hold now.
        self._room: Callable[[int], bool] = lambda held: True
        self._spares: list[_Spare] = []
        self._starting = 0
        self._returning = 0  # workers asked to release their model and come back as spares
        self._failures = 0  # spares that died before they were warm, in a row
        self._closed = False
        self._env = child_environment()

    def attach(self, pool: WorkerPool, budget: MemoryBudget | None) -> None:
        """Serve ``pool``: a spare that became one of its workers is replaced after that
        worker's first answer, and with a memory budget a spare starts only if it fits next to
        the pool's running models. The two measure each other (the budget counts what the
        spares hold), so they are tied here, once both exist."""
        pool.answered.subscribe(lambda event: self.answered(event.state.process))
        if budget is not None:
            budget.spares = self.held
            self._room = lambda held: budget.spare_fits(
                [state for state in pool.workers if state.running], held
            )

    @property
    def ready(self) -> int:
        """Warm spares, waiting for a model."""
        return sum(spare.warm for spare in self._spares)

    def held(self) -> list[int]:
        """What each spare holds now (resident memory; 0 when it cannot be read)."""
        return [process_rss(spare.pid) or 0 for spare in self._spares]

    def fill(self) -> None:
        """Start spares until there are ``count``, as far as the memory budget lets them."""
        while (
            not self._closed
            and self._failures < _GIVE_UP_AFTER
            and len(self._spares) + self._starting + self._returning < self._count
            and self._room(sum(self.held()))
        ):
            self._starting += 1
            self._tasks.start_soon(self._run_spare)

    def take_back(self) -> bool:
        """Whether a worker that began as a spare, being stopped, is to be a spare again.

        Yes while fewer than ``count`` spares are warm (one still importing may be stopped
        as one too many once it is warm: the released worker is ready sooner) and one more
        fits the memory budget.
        """
        if self._closed or self.ready + self._returning >= self._count:
            return False
        if not self._room(sum(self.held())):
            return False
        self._returning += 1
        return True

    def came_back(self, spare: _Spare) -> None:
        """A worker released its model: it is a warm spare again."""
        self._returning -= 1
        self._spares.append(spare)
        _log.info("worker released its model: a spare again", pid=spare.pid)
        self.warmed()

    def warmed(self) -> None:
        """A spare is warm: of more than ``count`` warm ones, those that served models most
        stop (a released worker's heap has grown with its model's use)."""
        warm = sorted((spare for spare in self._spares if spare.warm), key=lambda s: s.served)
        for spare in warm[self._count :]:
            self._spares.remove(spare)
            _log.info("one spare worker too many; stopping it", pid=spare.pid)
            self._tasks.start_soon(spare.send_exit)

    def close(self) -> None:
        """The router is stopping: kill every spare now (they have nothing to finish)."""
        self._closed = True
        for spare in self._spares:
            spare.signal_group(signal.SIGKILL)

    async def _run_spare(self) -> None:
        try:
            process = await self._launcher.launch(SPARE_ARGV, self._env)
        except OSError as exc:
            self._failures += 1
            _log.warning("cannot start a spare worker", error=str(exc))
            return
        finally:
            self._starting -= 1
        spare = _Spare(process, self)
        self._spares.append(spare)
        if self._closed:  # closed while it was being spawned
            spare.signal_group(signal.SIGKILL)
        code = await spare.watch()
        if spare.releasing:  # it ended before its release did
            self._returning -= 1
        if spare.handed_over:
            return  # it became a model's worker: that model's supervisor tells how it ended
        if spare not in self._spares:
            return  # stopped as one too many
        self._spares.remove(spare)
        if self._closed:
            return
        if spare.warm:
            self._failures = 0
        else:
            self._failures += 1
            if self._failures >= _GIVE_UP_AFTER:
                _log.error("spare workers keep failing; starting no more", code=code)
        _log.warning("spare worker exited; replacing it", code=code, pid=spare.pid)
        self.fill()

    def answered(self, process: ChildProcess | None) -> None:
        """A model's worker sent the first bytes of an answer: if a spare became that worker,
        its replacement may start now."""
        if isinstance(process, _Spare):
            process.used_now()

    async def launch(self, argv: Sequence[str], env: Mapping[str, str]) -> ChildProcess:
        """A worker for ``argv``: a warm spare if one fits, else a new process.

        The worker's key, which a new process gets in ``env``, reaches a spare in its load
        command (docs/protocol.md §8): a spare started before the key existed is as good.
        """
        command = tuple(argv[: len(WORKER_COMMAND)])
        spare = next((spare for spare in self._spares if spare.warm), None)
        key = env.get(WORKER_KEY_ENV, "")
        shared = {name: value for name, value in env.items() if name != WORKER_KEY_ENV}
        if spare is None or command != WORKER_COMMAND or shared != self._env:
            return await self._launcher.launch(argv, env)
        self._spares.remove(spare)
        _log.info("handing a model to a spare worker", pid=spare.pid)
        await spare.hand_over(argv[len(WORKER_COMMAND) :], key)
        return spare
