"""The listening sockets of the router and the workers, bound by us rather than by uvicorn.

Binding ourselves is what lets ``--port 0`` report the real port (router) and what hands the
port to the router without a probe-then-bind race (worker).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

__all__ = ["WORKER_KEEP_ALIVE_SECONDS", "Listen", "bind_hosts", "bind_tcp"]

# How long a worker keeps an idle keep-alive connection from the router open. The router forgets
# its idle connections well before that, so a request never races a worker closing its end.
WORKER_KEEP_ALIVE_SECONDS = 120


def bind_tcp(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A listening TCP socket; connections queue from now on, before the server runs.

    ``reuse_port``: ``SO_REUSEPORT``, as llama-server's ``--reuse-port``, so that other
    processes may listen on the same port (the kernel spreads connections between them)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio only sets TCP_NODELAY on accepted sockets whose protocol says
    # TCP, and without it every small answer waited ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


@dataclass(frozen=True, slots=True)
class Listen:
    """Where a server listens: ``--host`` (comma-separated addresses, as llama-server's), one
    ``--port`` for them all, and ``--reuse-port``. Built once from each process's settings."""

    host: str
    port: int
    reuse_port: bool = False


def bind_hosts(listen: Listen) -> list[socket.socket]:
    """One socket per address of ``listen.host``, all on one port: with port 0, the port the
    first one got."""
    sockets: list[socket.socket] = []
    try:
        for host in (h.strip() for h in listen.host.split(",") if h.strip()):
            on = sockets[0].getsockname()[1] if sockets else listen.port
            sockets.append(bind_tcp(host, on, reuse_port=listen.reuse_port))
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    if not sockets:
        raise OSError("--host names no address")
    return sockets
