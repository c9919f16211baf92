"""The Host check: a server on loopback answers only to loopback names (DNS rebinding).

A page on ``http://evil.example:8080`` whose name the attacker then points at 127.0.0.1 is, to
the browser, the same origin as its own requests to that name: CORS and the Origin check
(:mod:`corral.http.origins`) both see a page calling its own site. Only the ``Host`` header
still says ``evil.example``. So, as Ollama does since CVE-2024-28224, a server that listens
only on loopback addresses answers a request whose ``Host`` is not a loopback name with 403:
``localhost``, ``*.localhost``, an address in 127.0.0.0/8, ``[::1]``, any port, plus the names
given with ``--allowed-hosts`` (docs/security.md, "Web pages"). ``*`` there turns the check off.

A server listening beyond loopback is reached by names only its user knows (a LAN name, an
address, a proxy's), so there the check is off unless ``--allowed-hosts`` names them. A request
without ``Host`` (HTTP/1.0) cannot be a browser's and goes on.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Sequence

import structlog
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send

from corral.http.errors import ApiError, json_response

__all__ = ["HostPolicy", "host_check", "is_loopback_name", "listens_on_loopback_only"]

_log = structlog.get_logger("corral.http")


def _host_name(value: str) -> str:
    """The name in a ``Host`` value, without port or brackets, lower case, no trailing dot."""
    value = value.strip().lower()
    if value.startswith("["):
        name = value[1:].partition("]")[0]
    else:
        name, colon, port = value.rpartition(":")
        if not colon or not port.isdigit():
            name = value
    return name.rstrip(".")


def is_loopback_name(name: str) -> bool:
    """``localhost``, a name under ``.localhost`` (RFC 6761: always loopback), or a loopback
    address (127.0.0.0/8, ``::1``)."""
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def listens_on_loopback_only(sockets: Iterable[socket.socket]) -> bool:
    """Whether every listening socket is bound to a loopback address."""
    return all(is_loopback_name(str(sock.getsockname()[0])) for sock in sockets)


class HostPolicy:
    """Which ``Host`` names a server answers to besides loopback ones, from ``--allowed-hosts``
    (as :class:`corral.http.cors.CorsPolicy` is the origins, from ``--cors-origins``)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.any = "*" in names
        self.added = frozenset(_host_name(name) for name in names if name.strip())


class _HostCheck:
    def __init__(self, app: ASGIApp, added: frozenset[str]) -> None:
        self.app = app
        self._added = added

    def _allows(self, scope: Scope) -> bool:
        for name, value in scope["headers"]:
            if name == b"host":
                host = _host_name(bytes(value).decode("latin-1"))
                if not (is_loopback_name(host) or host in self._added):
                    _log.info("refused: a Host that is not this server's", host=host)
                    return False
        return True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.WEBSOCKET and not self._allows(scope):
            # Closed before it is accepted: uvicorn answers the handshake 403.
            await send({"type": "websocket.close", "code": 1008, "reason": ""})
            return
        if scope["type"] == ScopeType.HTTP and not self._allows(scope):
            error = ApiError(
                403, "this server does not answer to that Host name (see --allowed-hosts)"
            )
            await json_response(error.envelope(), error.status)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def host_check(app: ASGIApp, policy: HostPolicy, *, loopback_only: bool) -> ASGIApp:
    """``app`` behind the Host check, or ``app`` itself where the check is off: ``*`` among the
    names, or no names given to a server listening beyond loopback."""
    if policy.any or not (loopback_only or policy.added):
        return app
    return _HostCheck(app, policy.added)
