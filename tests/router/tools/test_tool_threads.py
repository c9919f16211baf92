"""The blocking tools' threads (router/tools/definitions.py): their own limit, so calls that
block cannot take the threads the router's other blocking work needs."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from router.tools.confinement import ToolsRoot
from router.tools.definitions import TOOL_THREADS, ToolCall, ToolResult, threaded

pytestmark = pytest.mark.anyio


async def test_blocked_tools_hold_at_most_their_threads(tmp_path: Path) -> None:
    release = threading.Event()
    running: list[int] = []
    most = 0
    lock = threading.Lock()

    def stuck(_: ToolCall) -> ToolResult:
        nonlocal most
        with lock:
            running.append(1)
            most = max(most, len(running))
        release.wait(10)
        with lock:
            running.pop()
        return {"plain_text_response": "done"}

    invoke = threaded(stuck)
    call = ToolCall({}, ToolsRoot.at(tmp_path), tmp_path)
    results: list[ToolResult] = []

    async def one() -> None:
        results.append(await invoke(call))

    async with anyio.create_task_group() as group:
        for _ in range(50):  # more than anyio's default 40 threads
            group.start_soon(one)
        await anyio.sleep(0.5)
        # The router's other blocking work still gets a thread at once.
        with anyio.fail_after(5):
            assert await anyio.to_thread.run_sync(lambda: 42) == 42
        release.set()
    assert most == TOOL_THREADS == 8  # docs/security.md says 8
    assert len(results) == 50
