"""uvicorn's server, made to stop as soon as it is told to when it has nothing to finish.

A stop is on the critical path of a swap (docs/serving.md, swaps): with ``--models-max 1`` the
next model's worker starts only once the evicted one has exited. uvicorn polls for its exit flag
every 100 ms, and its shutdown sleeps 100 ms more and then polls its connections every 100 ms
before it returns, although an evicted worker is idle by construction (the router evicts only
models with no request in flight). Here the exit wakes the main loop at once, and an idle
server (no request being answered) closes its listener and its keep-alive connections and
returns without waiting; a server still answering requests shuts down as uvicorn does, letting
them finish within ``timeout_graceful_shutdown``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

import uvicorn

__all__ = ["PromptServer"]

_TICK_SECONDS = 0.1  # uvicorn's: its date header and request limits are checked this often


class PromptServer(uvicorn.Server):
    """Create it on the event loop that will serve (the exit event belongs to that loop)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._exit_requested = asyncio.Event()

    def request_exit(self) -> None:
        """Stop serving (event loop only): at once when idle, else once requests are done."""
        self.should_exit = True
        self._exit_requested.set()

    async def main_loop(self) -> None:
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exit_requested.wait(), _TICK_SECONDS)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.server_state.tasks:  # answering: let the answers finish, as uvicorn does
            await super().shutdown(sockets)
            return
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()  # an idle keep-alive connection closes at once
