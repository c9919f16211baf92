"""Whether an RPC server answers, asked before ggml connects to it.

ggml-rpc has no error path for an unreachable server: it aborts the process (``GGML_ABORT(
"Failed to connect to …")``), and a server that accepts but never answers (it serves one client
at a time, so one already serving another worker) leaves the load waiting forever. So the
worker first says HELLO itself, with a deadline, and fails the load with a reason instead.

The HELLO exchange is the protocol's one fixed point (ggml-rpc.cpp: "RPC_CMD_HELLO must be
always 14"): ``| 14 | u64 size | conn_caps[24] |`` answered by ``| u64 size | major | minor |
patch | pad | conn_caps[24] |``. All-zero caps ask for no transport upgrade. A version this
build's client would refuse (another major, a newer minor) is refused here the same way.
"""

from __future__ import annotations

import socket
import struct

from worker.rpc.endpoints import Endpoint

__all__ = ["PROTOCOL_MAJOR", "PROTOCOL_MINOR", "RpcServerUnavailable", "say_hello"]

# ggml-rpc.h RPC_PROTO_MAJOR_VERSION and _MINOR_VERSION of the vendored llama.cpp
PROTOCOL_MAJOR = 7
PROTOCOL_MINOR = 0
_HELLO = 14
_CAPS_SIZE = 24
_REPLY_SIZE = 4 + _CAPS_SIZE


class RpcServerUnavailable(RuntimeError):
    """An RPC server cannot serve this worker; the message says which and why."""


def _receive(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("it closed the connection during the HELLO")
        data += chunk
    return data


def _exchange(endpoint: Endpoint, timeout: float) -> bytes:
    try:
        sock = socket.create_connection((endpoint.host, endpoint.port), timeout=timeout)
    except socket.gaierror as error:
        raise ConnectionError(f"cannot resolve {endpoint.host}: {error.strerror}") from None
    except TimeoutError:
        raise ConnectionError(f"cannot connect within {timeout:g} s") from None
    except OSError as error:
        raise ConnectionError(f"cannot connect: {error.strerror or error}") from None
    with sock:
        try:
            sock.sendall(struct.pack("<BQ", _HELLO, _CAPS_SIZE) + bytes(_CAPS_SIZE))
            (size,) = struct.unpack("<Q", _receive(sock, 8))
            if size != _REPLY_SIZE:
                raise ConnectionError("not a ggml RPC server (unexpected HELLO reply)")
            return _receive(sock, size)
        except TimeoutError:
            raise ConnectionError(
                f"no HELLO answer within {timeout:g} s (it serves one client at a time: "
                "is another worker using it?)"
            ) from None


def say_hello(endpoint: Endpoint, timeout: float) -> tuple[int, int, int]:
    """The server's protocol version, or :class:`RpcServerUnavailable` within ``timeout``."""
    try:
        major, minor, patch = _exchange(endpoint, timeout)[:3]
    except OSError as error:  # the reasons above; reset by the peer and the like
        raise RpcServerUnavailable(f"rpc-server {endpoint}: {error.strerror or error}") from None
    if major != PROTOCOL_MAJOR or minor > PROTOCOL_MINOR:
        raise RpcServerUnavailable(
            f"rpc-server {endpoint}: speaks RPC protocol {major}.{minor}.{patch}, this build "
            f"{PROTOCOL_MAJOR}.{PROTOCOL_MINOR}: run an rpc-server of the same llama.cpp version"
        )
    return major, minor, patch
