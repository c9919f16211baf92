"""An in-memory :class:`~router.workers.launcher.WorkerLauncher`: the test decides when workers are
ready.

Scheduling rules are about order, not time; with this launcher a test drives every load and exit
explicitly, so the rules are checked deterministically without processes or sleeps.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from corral.children.protocol import SPARE_STATE, ChildLine, LogLine, StateMessage

__all__ = ["FakeChild", "FakeLauncher"]


class FakeChild:
    def __init__(self, name: str, pid: int) -> None:
        self.name = name
        self.pid = pid
        send, receive = anyio.create_memory_object_stream[ChildLine | int](64)
        self._send: MemoryObjectSendStream[ChildLine | int] = send
        self._receive: MemoryObjectReceiveStream[ChildLine | int] = receive
        self.exit_commands = 0
        self.loads: list[list[str]] = []  # the flags a spare was handed, in order
        self.load_keys: list[str] = []  # the worker key each load command carried
        self.signals: list[signal.Signals] = []
        self.received: list[str] = []  # the exit command and signals, in the order they came
        # A hung worker: lets a test check that stop() escalates.
        self.ignore_exit_command = False
        self.ignore_sigterm = False

    async def pump(self, on_line: Callable[[ChildLine], None]) -> int:
        async with self._receive:
            async for item in self._receive:
                if isinstance(item, int):
                    return item
                on_line(item)
        return 0

    def say(self, line: ChildLine) -> None:
        """The child writes one line (a state message or a log line)."""
        self._send.send_nowait(line)

    def ready(self, devices: list[dict[str, Any]] | None = None, **payload: Any) -> None:
        """Loaded; ``devices``: where its bytes went (``meta.devices``: DeviceUse fields), and
        ``payload`` more of the ready payload (``gpu_devices``)."""
        meta: dict[str, Any] = {"n_ctx": 16}
        if devices is not None:
            meta["devices"] = devices
        self.say(StateMessage("ready", {"port": 9, "meta": meta, **payload}))

    def warm(self) -> None:
        """A spare worker is done importing."""
        self.say(StateMessage(SPARE_STATE))

    def _exit(self, code: int) -> None:
        if not self._send._closed:  # a second signal after the exit changes nothing
            # Nobody reads any more when the supervisor gave up on the child: it is gone anyway.
            with contextlib.suppress(anyio.BrokenResourceError):
                self._send.send_nowait(code)
            self._send.close()

    def crash(self, code: int, last_words: str = "") -> None:
        if last_words and not self._send._closed:
            self._send.send_nowait(LogLine(last_words))
        self._exit(code)

    async def send_load(self, argv: Sequence[str], key: str) -> None:
        self.loads.append(list(argv))
        self.load_keys.append(key)
        self.received.append("load command")

    async def send_release(self) -> None:
        self.received.append("release command")

    async def send_threads(self, threads: int, threads_batch: int) -> None:
        self.received.append(f"threads command {threads} {threads_batch}")

    async def send_exit(self) -> None:
        self.exit_commands += 1
        self.received.append("exit command")
        if not self.ignore_exit_command:
            self._exit(0)

    def resident(self) -> int | None:
        return None  # no process: nothing resident

    def signal_group(self, sig: signal.Signals) -> None:
        self.signals.append(sig)
        self.received.append(sig.name)
        if sig == signal.SIGCONT:  # continues a stopped process; ends nothing
            return
        if not (sig == signal.SIGTERM and self.ignore_sigterm):
            self._exit(-sig)


class FakeLauncher:
    def __init__(self) -> None:
        self.launched: list[str] = []
        self.children: dict[str, FakeChild] = {}  # the latest by name (a model's copies share it)
        self._every: list[FakeChild] = []
        self.environments: dict[str, dict[str, str]] = {}
        self.spawned = anyio.Event()
        # A test may hold launches (a spawn that takes a while) or make them fail.
        self.launch_gate: anyio.Event | None = None
        self.launch_error: OSError | None = None

    def close(self) -> None:
        """End every child still running, as a test's teardown."""
        for child in self._every:
            child.crash(0)

    async def launch(self, argv: Sequence[str], env: Mapping[str, str]) -> FakeChild:
        """A child named by its ``--alias``; spares (no alias) are ``spare1``, ``spare2``…"""
        args = list(argv)
        spares = sum(name.startswith("spare") for name in self.launched)
        name = args[args.index("--alias") + 1] if "--alias" in args else f"spare{spares + 1}"
        if self.launch_gate is not None:
            await self.launch_gate.wait()
        if self.launch_error is not None:
            raise self.launch_error
        self.environments[name] = dict(env)
        child = FakeChild(name, 1000 + len(self.launched))
        self.launched.append(name)
        self.children[name] = child
        self._every.append(child)
        self.spawned.set()
        self.spawned = anyio.Event()
        return child
