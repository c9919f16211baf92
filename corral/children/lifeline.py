"""Ties a child's life to the router's (docs/protocol.md §1).

Two guards, because either alone leaves gaps: the kernel's parent-death signal (Linux only, and it
fires when the spawning *thread* exits) and a thread that reads the command stream on stdin, where
EOF means the router is gone. Only children launched by a router (``CORRAL_ROUTER_PID`` set) arm
them: a worker started by hand from a shell must not die when its stdin is closed.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable

from corral.children.environment import ROUTER_PID_ENV
from corral.children.protocol import EXIT_COMMAND, EXIT_FAILED, LineSplitter

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


def _watch_stdin(on_exit_command: Callable[[], None]) -> None:
    # Raw reads on fd 0: a daemon thread blocked inside sys.stdin's buffered reader holds its
    # lock, and the interpreter aborts at exit when it cannot take that lock.
    splitter = LineSplitter()
    while chunk := os.read(0, 4096):
        if any(line.strip() == EXIT_COMMAND for line in splitter.feed(chunk)):
            on_exit_command()
    _die_now()


def arm(on_exit_command: Callable[[], None]) -> bool:
    """Install both guards if a router launched us; returns whether it did."""
    router_pid = os.environ.get(ROUTER_PID_ENV)
    if not router_pid:
        return False
    _set_parent_death_signal(int(router_pid))
    threading.Thread(
        target=_watch_stdin, args=(on_exit_command,), name="stdin-lifeline", daemon=True
    ).start()
    return True
