"""Stdio MCP servers behind ``/tools`` (docs/tools.md), with a server written with the SDK
(tests/support/mcp_test_server.py): listed, called, at once, failing, crashing, timing out,
recovering, and never outliving the router."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.support.mcp_test_server import STDERR_GREETING
from tests.support.router_process import RouterProcess, running_router

TEST_SERVER = str(Path(__file__).resolve().parents[3] / "support" / "mcp_test_server.py")
# The per-call timeout of the "slow" server: long enough for a quick call on a loaded machine
# (the timeout counts the call alone, not the server's start), and what the timed-out call waits.
SLOW_TIMEOUT_MS = 2000


def _servers(**entries: dict[str, Any]) -> str:
    return json.dumps({"mcpServers": entries})


def _sdk_server(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [TEST_SERVER], **extra}


@pytest.fixture(scope="module")
def router() -> Iterator[RouterProcess]:
    config = _servers(
        t=_sdk_server(),
        slow=_sdk_server(timeout_ms=SLOW_TIMEOUT_MS),
        broken={"command": "this_executable_does_not_exist_12345"},
    )
    with running_router(["--mcp-servers-json", config]) as running:
        yield running


def _call(router: RouterProcess, tool: str, **params: Any) -> dict[str, Any]:
    answer = router.client.post("/tools", json={"tool": tool, "params": params})
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def test_tools_are_listed_as_server_underscore_tool(router: RouterProcess) -> None:
    listing = router.client.get("/tools").raise_for_status().json()
    names = [entry["tool"] for entry in listing]
    expected = ["echo", "add", "sleep", "fail", "crash", "pid"]
    # MCP servers alone: no built-in tool; the broken server lists nothing.
    assert names == [f"t_{n}" for n in expected] + [f"slow_{n}" for n in expected]
    echo = listing[0]
    assert echo["type"] == "mcp"
    assert echo["permissions"] == {"write": False}
    function = echo["definition"]["function"]
    assert function["name"] == "t_echo"
    assert function["description"] == "Echo back the message."
    assert function["parameters"]["type"] == "object"
    assert "message" in function["parameters"]["properties"]


def test_a_tool_is_called_with_its_arguments(router: RouterProcess) -> None:
    assert _call(router, "t_echo", message="hello world") == {"plain_text_response": "hello world"}
    assert _call(router, "t_add", a=3, b=5) == {"plain_text_response": "8"}


def test_concurrent_calls_each_get_their_own_answer(router: RouterProcess) -> None:
    with ThreadPoolExecutor(max_workers=10) as pool:
        answers = list(pool.map(lambda i: _call(router, "t_echo", message=f"m{i}"), range(10)))
    assert answers == [{"plain_text_response": f"m{i}"} for i in range(10)]


def test_a_tool_error_is_the_calls_error(router: RouterProcess) -> None:
    answer = _call(router, "t_fail", reason="nope")
    assert set(answer) == {"error"}
    assert "fail" in answer["error"]


def test_a_call_past_its_timeout_fails_and_the_server_keeps_serving(router: RouterProcess) -> None:
    assert _call(router, "slow_sleep", seconds=600) == {"error": "request timed out"}
    router.wait_for_log("MCP tool call timed out", server="slow", tool="sleep")
    assert _call(router, "slow_echo", message="still here") == {"plain_text_response": "still here"}


def test_a_crashed_server_is_spawned_again_by_the_next_call(router: RouterProcess) -> None:
    before = int(_call(router, "t_pid")["plain_text_response"])
    crashed = _call(router, "t_crash")
    assert crashed == {"error": "Connection closed"}
    after = int(_call(router, "t_pid")["plain_text_response"])
    assert after != before
    assert not psutil.pid_exists(before) or psutil.Process(before).status() == psutil.STATUS_ZOMBIE
    assert router.client.get("/health").status_code == 200


def test_a_server_that_cannot_start_fails_its_calls_not_the_router(router: RouterProcess) -> None:
    router.wait_for_log("MCP server lists no tools", server="broken")
    assert router.client.get("/health").status_code == 200
    assert _call(router, "t_echo", message="ok") == {"plain_text_response": "ok"}


def test_the_servers_stderr_reaches_the_log(router: RouterProcess) -> None:
    router.wait_for_log("MCP server stderr", server="t", line=STDERR_GREETING)


def test_bad_mcp_configuration_stops_the_router(tmp_path: Path) -> None:
    for args in (
        ["--mcp-servers-json", "not valid json"],
        ["--mcp-servers-config", str(tmp_path / "missing.json")],
    ):
        with pytest.raises(RuntimeError, match="router did not start"):
            RouterProcess(args)


def test_a_server_dies_with_a_killed_router() -> None:
    with running_router(["--mcp-servers-json", _servers(t=_sdk_server())]) as router:
        pid = int(_call(router, "t_pid")["plain_text_response"])
        server = psutil.Process(pid)
        router.process.send_signal(signal.SIGKILL)
        router.process.wait()
        server.wait(timeout=30)  # raises if it outlives the router
