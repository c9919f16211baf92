"""An MCP server exec'd through the orphan guard dies with the process that spawned it."""

from __future__ import annotations

import signal
import subprocess
import sys

import psutil

from corral.children.environment import ROUTER_PID_ENV

_GUARD = [sys.executable, "-m", "router.tools.mcp.orphan_guard"]
# Stands in for the router: spawns a guarded command that ignores its stdin, waits until the
# guard has exec'd it (it says "ready"), says its pid, and waits to be killed.
_GUARDED = ["sh", "-c", "echo ready; exec sleep 600"]
_FAKE_ROUTER = f"""
import os, subprocess, sys
env = {{**os.environ, "{ROUTER_PID_ENV}": str(os.getpid())}}
child = subprocess.Popen(
    {_GUARD!r} + {_GUARDED!r}, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE
)
assert child.stdout.readline() == b"ready\\n"
print(child.pid, flush=True)
sys.stdin.read()
"""


def test_the_guarded_command_dies_when_its_router_is_killed() -> None:
    router = subprocess.Popen(
        [sys.executable, "-c", _FAKE_ROUTER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert router.stdout is not None
    server = psutil.Process(int(router.stdout.readline()))
    router.send_signal(signal.SIGKILL)
    router.wait()
    server.wait(timeout=30)  # raises if the guarded command outlives its router
    assert router.stdin is not None
    router.stdin.close()
    router.stdout.close()


def test_a_command_that_cannot_run_says_so_and_exits_127() -> None:
    done = subprocess.run(
        [*_GUARD, "this_executable_does_not_exist_12345"], capture_output=True, text=True
    )
    assert done.returncode == 127
    assert "cannot run MCP server this_executable_does_not_exist_12345" in done.stderr
