"""The tools this router offers (``--tools``, ``--mcp-servers-*``) and where they may reach.

Built-in tools are llama-server's seven. ``exec_shell_command`` runs any program, so it is only
offered with ``--tools-allow-exec`` (``--tools all`` leaves it out without it). MCP tools are
added once their servers have listed them at startup, as ``<server>_<tool>``; a name that is
already taken is skipped, as llama-server skips it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import structlog

from router.tools.confinement import ToolsRoot
from router.tools.definitions import Tool
from router.tools.file_tools import FILE_TOOLS
from router.tools.mcp.mcp_config import McpServerConfig
from router.tools.mcp.mcp_servers import McpServers
from router.tools.search_tools import SEARCH_TOOLS
from router.tools.shell_tools import EXEC_TOOL, INFO_TOOL

__all__ = ["BUILTIN_TOOL_NAMES", "ToolBox", "ToolChoiceError", "choose_builtin_tools"]

_READ, _WRITE, _EDIT = FILE_TOOLS
_GLOB, _GREP = SEARCH_TOOLS
# In llama-server's order, which GET /tools keeps.
_BUILTIN: Final = (_READ, _GLOB, _GREP, EXEC_TOOL, _WRITE, _EDIT, INFO_TOOL)
BUILTIN_TOOL_NAMES: Final = tuple(tool.name for tool in _BUILTIN)

_log = structlog.get_logger("corral.tools")


class ToolChoiceError(Exception):
    """``--tools`` names an unknown tool, or ``exec_shell_command`` without the opt-in."""


def choose_builtin_tools(names: tuple[str, ...], allow_exec: bool) -> tuple[Tool, ...]:
    unknown = [name for name in names if name != "all" and name not in BUILTIN_TOOL_NAMES]
    if unknown:
        raise ToolChoiceError(
            f'unknown tool "{unknown[0]}". available tools: {", ".join(BUILTIN_TOOL_NAMES)}'
        )
    if EXEC_TOOL.name in names and not allow_exec:
        raise ToolChoiceError(
            "exec_shell_command runs any command as the router's user: it also needs "
            "--tools-allow-exec"
        )
    everything = "all" in names
    return tuple(
        tool
        for tool in _BUILTIN
        if (everything or tool.name in names) and (allow_exec or tool is not EXEC_TOOL)
    )


class ToolBox:
    def __init__(
        self, builtin: tuple[Tool, ...], root: Path, mcp: tuple[McpServerConfig, ...]
    ) -> None:
        self.root = ToolsRoot.at(root)
        self._builtin = builtin
        self._mcp_configs = mcp
        self._mcp_tools: list[Tool] = []
        self._mcp_servers: McpServers | None = None

    @property
    def enabled(self) -> bool:
        """Whether ``/tools`` is served at all (else it answers 403, as llama-server's)."""
        return bool(self._builtin or self._mcp_configs)

    def tools(self) -> list[Tool]:
        return [*self._builtin, *self._mcp_tools]

    def find(self, name: str) -> Tool | None:
        return next((tool for tool in self.tools() if tool.name == name), None)

    def cancel_calls(self) -> None:
        """The router is stopping: MCP calls under way answer ``cancelled`` now (docs/tools.md).

        Built-in tools are left to finish within the graceful shutdown, as llama-server leaves
        them.
        """
        if self._mcp_servers is not None:
            self._mcp_servers.cancel_calls()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The MCP servers' lifetime: their tools listed on entry, every server stopped on exit."""
        if not self._mcp_configs:
            yield
            return
        async with McpServers(self._mcp_configs).running() as servers:
            self._mcp_servers = servers
            taken = {tool.name for tool in self._builtin}
            for tool in servers.tools:
                if tool.name in taken:
                    _log.warning(
                        "MCP tool collides with an existing tool, skipping", tool=tool.name
                    )
                    continue
                taken.add(tool.name)
                self._mcp_tools.append(tool)
            try:
                yield
            finally:
                self._mcp_tools = []
                self._mcp_servers = None
