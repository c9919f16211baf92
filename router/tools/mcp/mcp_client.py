"""One stdio MCP server, supervised (docs/tools.md, MCP servers), through the official ``mcp`` SDK.

Each server is spawned once at startup to list its tools and stopped, as llama-server does, then
spawned again on demand by the first call to one of its tools and kept for later calls, which
may run at once over its one connection. A connection is owned by one task of this module's task
group, the only place its SDK context managers are entered and left, so whatever goes wrong in
a server (it cannot be spawned, it answers garbage, it crashes, it hangs) ends that task, never
the router: the failure becomes the call's ``{"error": …}`` and the next call spawns it anew.

Every call has the server's ``timeout_ms``; the server's stderr goes to the log line by line;
and a server cannot outlive the router (:mod:`router.tools.mcp.orphan_guard`). When the router
begins to stop, the calls under way end at once with ``{"error": "cancelled"}``, as
llama-server's do, rather than holding its graceful shutdown open (docs/tools.md).
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import structlog
from anyio.abc import TaskGroup
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.shared.message import SessionMessage
from mcp.types import CallToolResult, TextContent

from corral.children.environment import child_environment
from router.tools.definitions import Tool, ToolCall, ToolResult
from router.tools.mcp.calls_under_way import CallsUnderWay
from router.tools.mcp.mcp_config import McpServerConfig

__all__ = ["McpServer"]

# How long a server may take from spawn to the end of the MCP handshake, and startup to list
# its tools: an interpreter importing an SDK takes seconds on a loaded machine, far more than
# the per-call timeout a fast tool deserves.
HANDSHAKE_TIMEOUT_S: Final = 30.0
WARMUP_TIMEOUT_S: Final = 40.0

_log = structlog.get_logger("corral.tools")


class McpUnavailable(Exception):
    """The server could not be spawned or did not complete the MCP handshake."""


def _log_stderr(fd: int, server: str) -> None:
    with os.fdopen(fd, "rb") as pipe:
        for raw in pipe:
            if line := raw.decode("utf-8", errors="replace").rstrip():
                _log.info("MCP server stderr", server=server, line=line)


@dataclass(eq=False)
class _Connection:
    ready: anyio.Event = field(default_factory=anyio.Event)
    ended: anyio.Event = field(default_factory=anyio.Event)  # set once it can serve no more
    stop: anyio.Event = field(default_factory=anyio.Event)
    session: ClientSession | None = None
    error: str = ""


def _result(result: CallToolResult) -> ToolResult:
    """As llama-server: the text parts joined by newlines; ``isError`` becomes ``error``."""
    text = "\n".join(part.text for part in result.content if isinstance(part, TextContent))
    if result.is_error:
        return {"error": text or "MCP tool returned an error"}
    return {"plain_text_response": text}


class McpServer:
    def __init__(self, config: McpServerConfig, group: TaskGroup, calls: CallsUnderWay) -> None:
        self.config = config
        self._group = group
        self._calls = calls
        self._lock = anyio.Lock()
        self._connection: _Connection | None = None

    def _parameters(self) -> StdioServerParameters:
        guard = [sys.executable, "-m", "router.tools.mcp.orphan_guard"]
        return StdioServerParameters(
            command=guard[0],
            args=[*guard[1:], self.config.command, *self.config.args],
            env={**child_environment(), **self.config.env},
            cwd=self.config.cwd,
        )

    async def _own(self, connection: _Connection) -> None:
        """The connection's whole life; never raises (see the module's docstring)."""
        read_fd, write_fd = os.pipe()
        threading.Thread(target=_log_stderr, args=(read_fd, self.config.name), daemon=True).start()
        try:
            with os.fdopen(write_fd, "w") as errlog:
                async with stdio_client(self._parameters(), errlog=errlog) as (read, write):
                    errlog.close()  # the child holds its own copy; EOF then means it is gone
                    watched_send, watched = anyio.create_memory_object_stream[
                        SessionMessage | Exception
                    ](0)

                    async def watch() -> None:
                        # The SDK's read stream ends when the server's stdout does: a crash.
                        async with watched_send:
                            async for message in read:
                                await watched_send.send(message)
                        connection.ended.set()

                    async with anyio.create_task_group() as inner:
                        inner.start_soon(watch)
                        async with ClientSession(watched, write) as session:
                            with anyio.fail_after(HANDSHAKE_TIMEOUT_S):
                                await session.initialize()
                            connection.session = session
                            connection.ready.set()
                            with anyio.CancelScope() as scope:
                                inner.start_soon(_cancel_when, connection, scope)
                                await anyio.sleep_forever()
                        inner.cancel_scope.cancel()
        except Exception as exc:
            connection.error = connection.error or _reason(exc)
            _log.warning("MCP server ended", server=self.config.name, error=connection.error)
        finally:
            connection.ended.set()
            connection.ready.set()

    async def _connect(self) -> _Connection:
        async with self._lock:
            current = self._connection
            if current is not None and not current.ended.is_set():
                return current
            connection = _Connection()
            self._group.start_soon(self._own, connection)
            try:
                await connection.ready.wait()
            except BaseException:
                connection.stop.set()  # a caller that gave up: the server must not linger
                raise
            if connection.session is None or connection.ended.is_set():
                raise McpUnavailable(connection.error or "it exited during the handshake")
            self._connection = connection
            _log.info("MCP server started", server=self.config.name)
            return connection

    async def list_tools(self) -> list[Tool]:
        """Startup: spawn, list, stop. A server that fails lists nothing (logged)."""
        tools: list[Tool] = []
        try:
            with anyio.fail_after(WARMUP_TIMEOUT_S):
                connection = await self._connect()
                assert connection.session is not None
                cursor: str | None = None
                while True:
                    params = {"cursor": cursor} if cursor else None
                    page = await connection.session.list_tools(params=params)  # type: ignore[arg-type]
                    tools += [
                        self._tool(t.name, t.description or "", t.input_schema) for t in page.tools
                    ]
                    if not (cursor := page.next_cursor):
                        break
        except (McpUnavailable, MCPError, TimeoutError) as exc:
            _log.warning("MCP server lists no tools", server=self.config.name, error=_reason(exc))
        await self.stop()
        _log.info("MCP server tools", server=self.config.name, tools=[t.name for t in tools])
        return tools

    def _tool(self, name: str, description: str, schema: dict[str, Any]) -> Tool:
        async def invoke(call: ToolCall) -> ToolResult:
            return await self.call(name, call.params)

        return Tool(
            name=f"{self.config.name}_{name}",
            display_name=f"{self.config.name}_{name}",
            description=description,
            parameters=schema if isinstance(schema, dict) else {},
            invoke=invoke,
            kind="mcp",
        )

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        with self._calls.tracked():
            return await self._call(tool, arguments)
        # Only reached when the scope swallowed its cancellation: the router is stopping.
        return {"error": "cancelled"}

    async def _call(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        try:
            connection = await self._connect()
            assert connection.session is not None
            with anyio.fail_after(self.config.timeout_s):
                result = await connection.session.call_tool(tool, arguments)
        except McpUnavailable as exc:
            return {"error": f"MCP server unavailable: {self.config.name}: {exc}"}
        except TimeoutError:
            _log.warning("MCP tool call timed out", server=self.config.name, tool=tool)
            return {"error": "request timed out"}
        except MCPError as exc:
            return {"error": exc.error.message}
        except Exception as exc:  # e.g. a reply the SDK cannot parse
            _log.warning(
                "MCP tool call failed", server=self.config.name, tool=tool, error=_reason(exc)
            )
            return {"error": f"MCP tool call failed: {_reason(exc)}"}
        return _result(result)

    async def stop(self) -> None:
        async with self._lock:
            if self._connection is not None:
                self._connection.stop.set()
                await self._connection.ended.wait()
                self._connection = None


async def _cancel_when(connection: _Connection, scope: anyio.CancelScope) -> None:
    """Ends the connection's wait when it is asked to stop or its server has gone."""
    async with anyio.create_task_group() as race:

        async def on(event: anyio.Event) -> None:
            await event.wait()
            race.cancel_scope.cancel()

        race.start_soon(on, connection.stop)
        race.start_soon(on, connection.ended)
    scope.cancel()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_reason(e) for e in exc.exceptions)
    if isinstance(exc, MCPError):
        return exc.error.message
    if isinstance(exc, TimeoutError):
        return "timed out"
    return str(exc) or type(exc).__name__
