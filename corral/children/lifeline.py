"""Ties a child's life to the router's (docs/protocol.md §1).

Two guards, because either alone leaves gaps: the kernel's parent-death signal (Linux only, and it
fires when the spawning *thread* exits) and a thread that reads the command stream on stdin, where
EOF means the router is gone. Only children launched by a router (``CORRAL_ROUTER_PID`` set) arm
them: a worker started by hand from a shell must not die when its stdin is closed.

A spare worker (docs/protocol.md §1, spare workers) arms the lifeline before it has a model and
waits for the load command on the same stdin; once that came, the exit command belongs to the
worker it became, which re-arms with its own handler (an exit command that arrives in between
is held for it).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable

from corral.children.environment import ROUTER_PID_ENV
from corral.children.protocol import (
    EXIT_COMMAND,
    EXIT_FAILED,
    RELEASE_COMMAND,
    LineSplitter,
    LoadCommand,
    ThreadsCommand,
    parse_load,
    parse_threads,
)

__all__ = ["arm"]

_PR_SET_PDEATHSIG = 1


def _die_now() -> None:
    # The router is gone: nobody can use this process any more, so no graceful shutdown.
    if os.getpgid(0) == os.getpid():
        os.killpg(0, signal.SIGKILL)
    os._exit(EXIT_FAILED)


def _set_parent_death_signal(router_pid: int) -> None:
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != router_pid:  # the router died before the guard was in place
        _die_now()


class _Commands:
    """Who handles the router's commands now; the stdin thread reads them, arm() sets them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.armed = False
        self.on_exit: Callable[[], None] | None = None
        self.on_load: Callable[[LoadCommand], None] | None = None
        self.on_release: Callable[[], None] | None = None
        self.on_threads: Callable[[ThreadsCommand], None] | None = None
        self.exit_pending = False  # came while nobody handled it: for the next arm()

    def exit_command(self) -> None:
        with self.lock:
            handler = self.on_exit
            self.exit_pending = handler is None
        if handler is not None:
            handler()

    def release_command(self) -> None:
        with self.lock:
            handler = self.on_release
        if handler is None:  # nothing to release: the router wants the process stopped
            self.exit_command()
        else:
            handler()

    def threads_command(self, command: ThreadsCommand) -> None:
        with self.lock:
            handler = self.on_threads
        if handler is not None:  # a spare has no context yet: the router sends it none
            handler(command)

    def load_command(self, command: LoadCommand) -> None:
        with self.lock:
            handler, self.on_load = self.on_load, None
            if handler is not None:  # the spare's wait is over: its exit handler with it
                self.on_exit = None
        if handler is not None:
            handler(command)


_commands = _Commands()


def _watch_stdin() -> None:
    # Raw reads on fd 0: a daemon thread blocked inside sys.stdin's buffered reader holds its
    # lock, and the interpreter aborts at exit when it cannot take that lock.
    splitter = LineSplitter()
    while chunk := os.read(0, 4096):
        for line in splitter.feed(chunk):
            if line.strip() == EXIT_COMMAND:
                _commands.exit_command()
            elif line.strip() == RELEASE_COMMAND:
                _commands.release_command()
            elif (load := parse_load(line)) is not None:
                _commands.load_command(load)
            elif (threads := parse_threads(line)) is not None:
                _commands.threads_command(threads)
    _die_now()


def arm(
    on_exit_command: Callable[[], None],
    on_load_command: Callable[[LoadCommand], None] | None = None,
    on_release_command: Callable[[], None] | None = None,
    on_threads_command: Callable[[ThreadsCommand], None] | None = None,
) -> bool:
    """Install both guards if a router launched us; returns whether it did.

    Called again, it only replaces the handlers: the guards and the stdin thread stay. A
    release command with no handler for it is an exit command.
    """
    router_pid = os.environ.get(ROUTER_PID_ENV)
    if not router_pid:
        return False
    with _commands.lock:
        first, _commands.armed = not _commands.armed, True
        _commands.on_exit, _commands.on_load = on_exit_command, on_load_command
        _commands.on_release, _commands.on_threads = on_release_command, on_threads_command
        pending, _commands.exit_pending = _commands.exit_pending, False
    if first:
        _set_parent_death_signal(int(router_pid))
        threading.Thread(target=_watch_stdin, name="stdin-lifeline", daemon=True).start()
    if pending:
        on_exit_command()
    return True
