"""``corral rpc-server``: this machine's devices offered to other machines' workers.

ggml's own server (``ggml_backend_rpc_start_server``, ggml-rpc.h) from the worker's llama.cpp
build, so client and server always speak the same protocol version. What is Corral's: the
checks before it starts (an IPv4 address to bind, loopback unless ``--allow-remote``, the port
free), the warning that the protocol has no authentication, and a clean stop on SIGINT/SIGTERM.

ggml's server loops in C (accept, then serve that one client until it leaves) and never
returns to Python, so it runs on a thread with SIGINT and SIGTERM blocked, while the main thread
waits for them with ``sigwait``; a server that gives up (it could not listen) wakes the main
thread the same way, with SIGUSR1.
"""

from __future__ import annotations

import argparse
import ctypes
import ipaddress
import os
import signal
import socket
import sys
import threading

import structlog

from corral.cpu_threads import default_threads
from corral.logs import configure_logging
from corral.options.values import parse_size

__all__ = ["DEFAULT_PORT", "main", "rpc_server_parser"]

DEFAULT_PORT = 50052  # llama.cpp's rpc-server default (tools/rpc/rpc-server.cpp)
_STOP = {signal.SIGINT, signal.SIGTERM}
_SERVER_RETURNED = signal.SIGUSR1

_log = structlog.get_logger("corral.rpc_server")


def rpc_server_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="corral rpc-server",
        description="Offer this machine's devices to workers elsewhere (their --rpc HOST:PORT) "
        "through ggml's RPC server. The protocol has no authentication or encryption: run it "
        "on a trusted network only (docs/scaling.md).",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="IPv4 address to listen on (default: %(default)s)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help="TCP port to listen on (default: %(default)s)",
    )
    parser.add_argument(
        "-t", "--threads", type=int, help="CPU threads (default: the physical cores)"
    )
    parser.add_argument(
        "--mem",
        metavar="SIZE",
        help="accepted for the issue's and older llama.cpp's command lines, with a warning: "
        "this ggml's server offers each device's own free memory (docs/scaling.md)",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a non-loopback --host (anyone who can reach it can use this machine)",
    )
    return parser


def _check_address(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    try:
        address = ipaddress.IPv4Address(args.host)
    except ValueError:
        # ggml binds with inet_addr (transport.cpp): an IPv4 address, not a name.
        parser.error(f"--host {args.host}: expected an IPv4 address such as 127.0.0.1")
    if not address.is_loopback and not args.allow_remote:
        parser.error(
            f"--host {args.host} is reachable from other machines and the RPC protocol has no "
            "authentication; add --allow-remote to listen there anyway, on a trusted network"
        )
    if not 0 < args.port < 65536:
        parser.error(f"--port {args.port}: expected 1 to 65535")
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads {args.threads}: expected at least 1")
    if args.mem is not None:
        try:
            parse_size(args.mem)
        except ValueError as error:
            parser.error(f"--mem: {error}")
    # Refused here with the reason: ggml would only print "Failed to create server socket".
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as ggml's own socket
    try:
        probe.bind((args.host, args.port))
        probe.listen(1)
    except OSError as error:
        parser.exit(
            1, f"corral rpc-server: cannot listen on {args.host}:{args.port}: {error.strerror}\n"
        )
    finally:
        probe.close()


def _served_devices() -> list[int]:
    """As llama.cpp's rpc-server chooses: the accelerators (GPUs), else the CPU."""
    from worker.host import ggml_backends

    found = ggml_backends.devices()
    chosen = [
        device
        for device, kind in found
        if kind not in (ggml_backends.DEVICE_TYPE_CPU, ggml_backends.DEVICE_TYPE_ACCEL)
    ]
    return chosen or [device for device, kind in found if kind == ggml_backends.DEVICE_TYPE_CPU]


def main(argv: list[str] | None = None) -> None:
    parser = rpc_server_parser()
    args = parser.parse_args(argv)
    configure_logging()
    _check_address(args, parser)
    endpoint = f"{args.host}:{args.port}"
    # ggml's server takes TCP connections from anyone (no key, no Unix socket, no peer check),
    # so what it exposes depends on the address alone (docs/security.md, local users).
    if ipaddress.IPv4Address(args.host).is_loopback:
        reach = "every local user and process"
    else:
        reach = "anyone who can reach this address (local users too)"
    _log.warning(
        f"the RPC protocol has no authentication or encryption: {reach} can use these "
        "devices, read and write their memory; use it only where that is acceptable",
        endpoint=endpoint,
    )
    if args.mem is not None:
        # ggml_backend_rpc_start_server (ggml-rpc.h) takes no memory figure in this llama.cpp.
        _log.warning(
            "--mem has no effect: this ggml's RPC server offers each device's own free memory; "
            "limit what a model puts here with n-gpu-layers on the serving side",
            mem=args.mem,
        )
    # Only now: the parser alone (--help, scripts/gen_config_docs.py) needs no llama.cpp.
    from worker.host import ggml_backends

    try:
        start_server = ggml_backends.start_server_function()
    except ggml_backends.RpcBackendMissing as error:
        parser.exit(1, f"corral rpc-server: {error}\n")
    devices = _served_devices()
    threads = args.threads or default_threads()
    _log.info(
        "rpc server starting",
        endpoint=endpoint,
        devices=[ggml_backends.device_name(device) for device in devices],
        threads=threads,
    )
    device_array = (ctypes.c_void_p * len(devices))(*devices)
    waited = {*_STOP, _SERVER_RETURNED}
    signal.pthread_sigmask(signal.SIG_BLOCK, waited)  # the server thread inherits the mask

    def serve() -> None:
        start_server(endpoint.encode(), None, threads, len(devices), device_array)
        os.kill(os.getpid(), _SERVER_RETURNED)

    threading.Thread(target=serve, name="rpc-server", daemon=True).start()
    received = signal.sigwait(waited)
    if received == _SERVER_RETURNED:
        _log.error("rpc server stopped: ggml's message above says why", endpoint=endpoint)
        sys.exit(1)
    _log.info("rpc server stopping", signal=signal.Signals(received).name)
    sys.stdout.flush()
    sys.stderr.flush()
    # The server thread is inside ggml's accept loop, which has no way out: end the process
    # without running C++ static destructors under it.
    os._exit(0)
