"""A stdio MCP server written with the official SDK, for the router's MCP tests.

Tools: ``echo`` (its message back), ``add``, ``sleep`` (for timeouts), ``fail`` (an ``isError``
result), ``crash`` (the process exits mid-call) and ``pid`` (tells respawns apart). It writes one
line to stderr at startup so tests can see that stderr reaches the router's log, and one when a
``sleep`` begins, so that a test knows the call is under way in the server. Run as
``python tests/support/mcp_test_server.py``.
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer

__all__: list[str] = []

STDERR_GREETING = "mcp-test-server: listening on stdio"
SLEEP_STARTED = "mcp-test-server: sleep started"

server = MCPServer("corral-test")


@server.tool()
def echo(message: str) -> str:
    """Echo back the message."""
    return message


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool()
def sleep(seconds: float) -> str:
    """Sleep, then answer."""
    print(SLEEP_STARTED, file=sys.stderr, flush=True)
    time.sleep(seconds)
    return "slept"


@server.tool()
def fail(reason: str) -> str:
    """Fail with the reason."""
    raise ValueError(reason)


@server.tool()
def crash() -> str:
    """Exit the whole server process without answering."""
    os._exit(3)


@server.tool()
def pid() -> str:
    """This server process's id."""
    return str(os.getpid())


if __name__ == "__main__":
    print(STDERR_GREETING, file=sys.stderr, flush=True)
    server.run("stdio")
