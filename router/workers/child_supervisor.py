"""One child process from spawn to exit: workers and downloads alike (docs/protocol.md §1).

A :class:`ChildSupervisor` launches its child through the
:class:`~router.workers.launcher.WorkerLauncher`
seam with the child environment, relays the child's log lines into the router's log, hands its
state messages to its owner, stops it by escalation and says why it ended. What the state
messages mean is the owner's business (the worker pool, the download jobs), not this module's.
"""

from __future__ import annotations

import signal
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import anyio
import structlog

from corral.children.protocol import EXIT_FAILED, ChildLine, LogLine, MalformedLine, StateMessage
from router.workers.child_logs import relay_log_line
from router.workers.launcher import ChildProcess, WorkerLauncher

__all__ = [
    "EXIT_CANNOT_START",
    "EXIT_SUPERVISION_FAILED",
    "ChildExit",
    "ChildSupervisor",
    "exit_code",
    "exit_reason",
]

_log = structlog.get_logger("corral.children")

# The shell's code for a command that could not be run.
EXIT_CANNOT_START = 127
# The router itself failed while watching the child: reported like a child's generic failure.
EXIT_SUPERVISION_FAILED = EXIT_FAILED
_SIGNAL_EXIT_BASE = 128


def exit_code(returncode: int) -> int:
    """A signal death the shell's way (128 + signal) rather than negative."""
    return _SIGNAL_EXIT_BASE - returncode if returncode < 0 else returncode


def exit_reason(returncode: int) -> str:
    if returncode < 0:
        return f"killed by {signal.Signals(-returncode).name}"
    return f"exited with code {returncode}"


@dataclass(frozen=True, slots=True)
class ChildExit:
    """How a child ended. ``returncode`` is the raw one: negative for a signal death."""

    returncode: int
    reason: str
    last_words: str | None = None  # the child's last log line that explains a failure
    launch_error: OSError | None = None
    internal_error: Exception | None = None
    refused: bool = False  # never launched: the pre-launch check found ``reason``

    @property
    def code(self) -> int:
        return exit_code(self.returncode)


class ChildSupervisor:
    """Run one child; ``on_state`` gets its state messages, in order, on the supervising task."""

    def __init__(
        self,
        launcher: WorkerLauncher,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        name: str,
        source: str,
        on_state: Callable[[StateMessage], None],
        stop_timeout: float,
        check: Callable[[], str | None] | None = None,
    ) -> None:
        self._launcher = launcher
        self._check = check  # before launching: what is wrong (the child would fail), or None
        self._argv = list(argv)
        self._env = dict(env)
        self._name = name
        self._source = source  # "worker" or "download": tags its relayed logs
        self._on_state = on_state
        self._stop_timeout = stop_timeout
        self._process: ChildProcess | None = None
        self._stop_requested = False
        self._kill_at_once = False
        self._exited = anyio.Event()
        self._last_log: deque[str] = deque(maxlen=1)

    @property
    def process(self) -> ChildProcess | None:
        """The running child, once spawned and until it exits."""
        return self._process

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    @property
    def has_exited(self) -> bool:
        return self._exited.is_set()

    def forget_last_words(self) -> None:
        """A child that got past a failure (a load that ended well) has nothing to explain."""
        self._last_log.clear()

    async def wait_exited(self) -> None:
        await self._exited.wait()

    async def run(self) -> ChildExit:
        """Spawn the child and watch it until it exits; never raises but for cancellation.

        The caller's task is usually in the router's lifespan task group: an exception escaping
        it would stop the whole router, so every failure ends here as this one child's failure.
        """
        try:
            return await self._run()
        except Exception as caught:
            exc = _sole_exception(caught)
            _log.exception("child supervision failed", model=self._name, source=self._source)
            if self._process is not None:
                self._process.signal_group(signal.SIGKILL)
            return ChildExit(
                EXIT_SUPERVISION_FAILED,
                f"internal error supervising the {self._source}: {exc}",
                internal_error=exc,
            )
        finally:
            self._process = None
            self._exited.set()

    async def _run(self) -> ChildExit:
        if self._stop_requested:
            return ChildExit(0, "stopped before it started")
        if self._check is not None:
            # In a thread: walking a large header (a 150k-word vocabulary) takes tens of ms.
            problem = await anyio.to_thread.run_sync(self._check)
            if problem is not None:
                return ChildExit(EXIT_CANNOT_START, problem, refused=True)
            if self._stop_requested:
                return ChildExit(0, "stopped before it started")
        try:
            self._process = process = await self._launcher.launch(self._argv, self._env)
        except OSError as exc:
            return ChildExit(EXIT_CANNOT_START, f"cannot start: {exc}", launch_error=exc)
        if self._stop_requested:  # stopped while spawning: stop() left the escalation to us
            async with anyio.create_task_group() as group:
                group.start_soon(self._escalate, process)
                returncode = await process.pump(self._on_line)
                self._exited.set()  # ends the escalation's wait, so the group can close
        else:
            returncode = await process.pump(self._on_line)
        last_words = self._last_log[0] if self._last_log else None
        reason = exit_reason(returncode)
        # A clean exit's last line is shutdown chatter (llama.cpp's "~llama_context: ..."), not
        # an explanation: the reason quotes it only for a failure (a code or a signal).
        if last_words and returncode != 0:
            reason = f"{reason}: {last_words}"
        return ChildExit(returncode, reason, last_words)

    def _on_line(self, line: ChildLine) -> None:
        if isinstance(line, StateMessage):
            self._on_state(line)
        elif isinstance(line, LogLine):
            relay_log_line(
                line.text, model=self._name, source=self._source, last_error=self._last_log
            )
        elif isinstance(line, MalformedLine):
            _log.warning(
                "malformed state line", model=self._name, source=self._source, reason=line.reason
            )

    def kill(self) -> None:
        """SIGKILL the child's group now, if it runs."""
        if self._process is not None:
            self._process.signal_group(signal.SIGKILL)

    async def stop(self, *, at_once: bool = False) -> None:
        """Exit command; SIGTERM to the group after the stop timeout; SIGKILL after as long again.

        ``at_once`` skips straight to SIGKILL: a child with nothing to finish (a worker still
        loading). Returns once the child has exited, or was never launched.
        """
        self._stop_requested = True
        self._kill_at_once = self._kill_at_once or at_once
        process = self._process
        if process is None:
            # Not spawned yet: run() escalates once it is, or never launches it.
            await self._exited.wait()
            return
        await self._escalate(process)

    async def terminate(self) -> None:
        """SIGTERM to the group now; SIGKILL after the stop timeout. For a child that hangs.

        A hung child would not read the exit command, so it starts at SIGTERM. SIGCONT follows
        it: a stopped process keeps a SIGTERM pending until it is continued, and should get
        its chance to exit cleanly before the SIGKILL.
        """
        self._stop_requested = True
        process = self._process
        if process is None:
            self._kill_at_once = True  # not spawned yet: run() kills it once it is
            await self._exited.wait()
            return
        process.signal_group(signal.SIGTERM)
        process.signal_group(signal.SIGCONT)
        if not await self._wait_then_signal(process, signal.SIGKILL):
            await self._exited.wait()

    async def _escalate(self, process: ChildProcess) -> None:
        if self._kill_at_once:
            process.signal_group(signal.SIGKILL)
        else:
            await process.send_exit()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if await self._wait_then_signal(process, sig):
                return
        await self._exited.wait()

    async def _wait_then_signal(self, process: ChildProcess, sig: signal.Signals) -> bool:
        """Give the child the stop timeout to exit, else send ``sig``; True if it exited."""
        with anyio.move_on_after(self._stop_timeout):
            await self._exited.wait()
            return True
        _log.warning(
            "child did not stop in time", model=self._name, source=self._source, signal=sig.name
        )
        process.signal_group(sig)
        return False


def _sole_exception(exc: Exception) -> Exception:
    """The one error a task group wrapped, so the reason names what went wrong."""
    while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
