"""The configured MCP servers (docs/tools.md, MCP servers) and the tools they list.

Each server is a :class:`router.tools.mcp.mcp_client.McpServer`. That module, and with it the
``mcp`` SDK (over a second of imports, half the router's startup), is imported only when a server is
configured: most routers run none.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from router.tools.definitions import Tool
from router.tools.mcp.calls_under_way import CallsUnderWay
from router.tools.mcp.mcp_config import McpServerConfig

__all__ = ["McpServers"]


class McpServers:
    """Every configured server, and the tools they listed at startup."""

    def __init__(self, configs: tuple[McpServerConfig, ...]) -> None:
        self._configs = configs
        self._calls = CallsUnderWay()
        self.tools: list[Tool] = []

    def cancel_calls(self) -> None:
        """Ends every call under way, and every later one, with ``{"error": "cancelled"}``.

        Called as the router begins to stop, before the HTTP server waits for open responses:
        a slow tool would otherwise hold the shutdown for its whole ``timeout_ms``.
        """
        self._calls.cancel()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[McpServers]:
        if not self._configs:
            yield self
            return
        from router.tools.mcp.mcp_client import McpServer

        async with anyio.create_task_group() as group:
            servers = [McpServer(config, group, self._calls) for config in self._configs]
            listed: dict[str, list[Tool]] = {}

            async def warm(server: McpServer) -> None:
                listed[server.config.name] = await server.list_tools()

            async with anyio.create_task_group() as warmup:
                for server in servers:
                    warmup.start_soon(warm, server)
            self.tools = [tool for server in servers for tool in listed[server.config.name]]
            try:
                yield self
            finally:
                with anyio.CancelScope(shield=True):
                    for server in servers:
                        await server.stop()
                group.cancel_scope.cancel()
