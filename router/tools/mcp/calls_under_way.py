"""The MCP tool calls under way, so that a stopping router can end them at once.

Apart from :mod:`router.tools.mcp.mcp_client` because
:class:`router.tools.mcp.mcp_servers.McpServers` holds it from the start, and that module imports no
``mcp`` SDK until a server is configured.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio

__all__ = ["CallsUnderWay"]


class CallsUnderWay:
    """The cancel scopes of the calls running now, so that a stopping router can end them."""

    def __init__(self) -> None:
        self._scopes: set[anyio.CancelScope] = set()
        self._cancelled = False

    @contextmanager
    def tracked(self) -> Iterator[anyio.CancelScope]:
        with anyio.CancelScope() as scope:
            if self._cancelled:  # a call that arrives once the router is stopping
                scope.cancel()
            self._scopes.add(scope)
            try:
                yield scope
            finally:
                self._scopes.discard(scope)

    def cancel(self) -> None:
        self._cancelled = True
        for scope in self._scopes:
            scope.cancel()
