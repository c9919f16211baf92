"""Stopping the router during a slow MCP tool call (docs/tools.md, docs/operations.md): the call
is cancelled and answered at once instead of holding the graceful shutdown open, as
llama-server's ``test_mcp_slow_tool_call_slot_release`` expects of it, while other requests in
flight still get their graceful finish."""

from __future__ import annotations

import json
import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil

from tests.support.mcp_test_server import SLEEP_STARTED
from tests.support.router_process import RouterProcess

TEST_SERVER = str(Path(__file__).resolve().parents[3] / "support" / "mcp_test_server.py")
# Far longer than the graceful shutdown (5 s) and the test: the call can only end by being cut.
SLOW_S = 600


def test_sigterm_answers_a_pending_mcp_call_and_the_router_exits(tmp_path: Path) -> None:
    servers = {"t": {"command": sys.executable, "args": [TEST_SERVER], "timeout_ms": SLOW_S * 1000}}
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    router = RouterProcess(
        [
            "--mcp-servers-json",
            json.dumps({"mcpServers": servers}),
            "--tools",
            "exec_shell_command",
            "--tools-allow-exec",
            "--tools-root",
            str(tmp_path),
        ]
    )
    try:
        pid = router.client.post("/tools", json={"tool": "t_pid", "params": {}}).json()
        server = psutil.Process(int(pid["plain_text_response"]))
        with (
            httpx.Client(base_url=router.url, timeout=None) as caller,
            ThreadPoolExecutor(max_workers=2) as pool,
        ):
            slow = pool.submit(
                caller.post, "/tools", json={"tool": "t_sleep", "params": {"seconds": SLOW_S}}
            )
            # A request that is not an MCP call, held open until the test lets it finish.
            held = pool.submit(
                caller.post,
                "/tools",
                json={
                    "tool": "exec_shell_command",
                    "params": {"command": "read x < gate; echo $x"},
                },
            )
            router.wait_for_log("MCP server stderr", server="t", line=SLEEP_STARTED)
            with gate.open("w") as writer:  # returns once the shell has the gate open
                assert not slow.done()
                assert not held.done()
                router.process.send_signal(signal.SIGTERM)
                writer.write("let-through\n")
            # The MCP call has SLOW_S to run and nothing else ends it: the router exits
            # first, having answered it; a call left to run would be killed by the graceful
            # shutdown's timeout instead, its client getting a 500.
            assert router.process.wait(timeout=SLOW_S / 2) == -signal.SIGTERM
            answer, finished = slow.result(), held.result()
        assert answer.status_code == 200
        assert answer.json() == {"error": "cancelled"}
        router.wait_for_log("tool call", tool="t_sleep", outcome="error: cancelled")
        # The other request finished normally within the graceful shutdown.
        assert finished.status_code == 200
        assert "let-through" in finished.json()["plain_text_response"]
        server.wait(timeout=30)  # raises if the server outlives the router
    finally:
        router.stop()
