"""``HOST:PORT`` endpoints of RPC servers, read as ggml-rpc reads them.

ggml splits an endpoint at its first colon (ggml-rpc.cpp ``parse_endpoint``) and connects over
IPv4 only (transport.cpp ``socket_t::connect``: ``AF_INET``, ``gethostbyname``), so a bracketed
IPv6 address is refused here with that reason instead of failing deep in the library.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Endpoint", "parse_endpoint", "parse_endpoints"]


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def parse_endpoint(text: str) -> Endpoint:
    """``HOST:PORT``; ``ValueError`` says what is wrong."""
    host, colon, port = text.strip().partition(":")
    if host.startswith("[") or ":" in port:
        raise ValueError(f"'{text}': ggml's RPC backend speaks IPv4 only (HOST:PORT)")
    if not colon or not host:
        raise ValueError(f"'{text}': expected HOST:PORT")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"'{text}': the port must be a number from 1 to 65535")
    return Endpoint(host, int(port))


def parse_endpoints(text: str) -> tuple[Endpoint, ...]:
    """A comma list of endpoints, as ``--rpc`` takes them; duplicates count once."""
    endpoints = [parse_endpoint(item) for item in text.split(",") if item.strip()]
    if not endpoints:
        raise ValueError("expected HOST:PORT[,HOST:PORT…]")
    return tuple(dict.fromkeys(endpoints))
