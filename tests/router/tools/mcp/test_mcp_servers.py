"""The ``mcp`` SDK is imported only when a server is configured (router/tools/mcp/mcp_servers.py):
its imports were half of every router's startup, and most routers run no MCP server."""

from __future__ import annotations

import subprocess
import sys

import anyio

from router.tools.mcp.mcp_servers import McpServers


def test_a_router_without_mcp_servers_never_imports_the_sdk() -> None:
    script = (
        "import sys, anyio\n"
        "import router.app\n"
        "from router.tools.mcp.mcp_servers import McpServers\n"
        "async def main():\n"
        "    async with McpServers(()).running() as servers:\n"
        "        assert servers.tools == []\n"
        "anyio.run(main)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"


def test_no_servers_list_no_tools_and_cancelling_is_harmless() -> None:
    async def main() -> None:
        servers = McpServers(())
        async with servers.running():
            servers.cancel_calls()
            assert servers.tools == []

    anyio.run(main)
