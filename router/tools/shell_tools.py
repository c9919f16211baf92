"""``exec_shell_command`` (only with ``--tools-allow-exec``) and ``get_info``.

A command runs with ``sh -c`` in the call's working directory, with the router's environment less
its secrets, in a session of its own so that a timeout (or the client leaving a stream) kills
everything it started, not only the shell.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import suppress
from typing import Final

import anyio
from anyio.abc import Process

from corral.children.environment import child_environment
from router.tools.definitions import Tool, ToolCall, ToolResult, optional_int, required_str

__all__ = ["EXEC_TOOL", "INFO_TOOL"]

EXEC_MAX_OUTPUT: Final = 16 * 1024
EXEC_MAX_TIMEOUT_S: Final = 60
EXEC_DEFAULT_TIMEOUT_S: Final = 10
INFO_TIMEOUT_S: Final = 5


def _kill_group(process: Process) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def _run_shell(call: ToolCall) -> AsyncIterator[str]:
    command = required_str(call.params, "command")
    timeout = min(optional_int(call.params, "timeout", EXEC_DEFAULT_TIMEOUT_S), EXEC_MAX_TIMEOUT_S)
    limit = min(optional_int(call.params, "max_output_size", EXEC_MAX_OUTPUT), EXEC_MAX_OUTPUT)
    process = await anyio.open_process(
        ["sh", "-c", command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=call.cwd,
        env=child_environment(),  # never the router's keys or hub token
        start_new_session=True,
    )
    timed_out = False
    try:
        async with process:
            assert process.stdout is not None
            kept = 0
            cut = False
            with anyio.move_on_after(timeout) as scope:
                async for data in process.stdout:
                    if cut:
                        continue  # keep draining: a full pipe would block the child
                    piece = data[: limit - kept]
                    kept += len(piece)
                    cut = len(data) > len(piece)
                    if piece:
                        yield piece.decode("utf-8", errors="replace")
                await process.wait()
            if scope.cancelled_caught:
                timed_out = True
                _kill_group(process)
                await process.wait()
            if cut:
                yield "\n[output truncated]"
    finally:
        _kill_group(process)  # the client left, or the shell exited leaving children behind
    tail = f"\n[exit code: {process.returncode}]"
    yield tail + (" [exit due to timed out]" if timed_out else "")


async def _exec_shell_command(call: ToolCall) -> ToolResult:
    return {"plain_text_response": "".join([chunk async for chunk in _run_shell(call)])}


async def _get_info(call: ToolCall) -> ToolResult:
    os_info = "unknown"
    with anyio.move_on_after(INFO_TIMEOUT_S):
        done = await anyio.run_process(["uname", "-a"], check=False, cwd=call.cwd)
        if done.returncode == 0:
            os_info = done.stdout.decode("utf-8", errors="replace").strip()
    return {"os": os_info, "cwd": call.cwd.as_posix()}


EXEC_TOOL: Final = Tool(
    name="exec_shell_command",
    display_name="Execute shell command",
    description="Execute a shell command and return its output (stdout and stderr combined).",
    parameters={
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "Shell command to execute"},
            "timeout": {
                "type": "integer",
                "description": f"Timeout in seconds (default 10, max {EXEC_MAX_TIMEOUT_S})",
            },
            "max_output_size": {
                "type": "integer",
                "description": f"Maximum output size in bytes (default {EXEC_MAX_OUTPUT})",
            },
        },
        "required": ["command"],
    },
    invoke=_exec_shell_command,
    write=True,
    stream=_run_shell,
)

INFO_TOOL: Final = Tool(
    name="get_info",
    display_name="Get Runtime Info",
    description="Returns runtime info: the OS name/version and the current working directory",
    parameters={"type": "object", "properties": {}},
    invoke=_get_info,
)
