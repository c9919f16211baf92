"""``--rpc HOST:PORT[,…]``: RPC servers' devices registered for the model to offload layers to.

As llama-server does it (common/arg.cpp ``add_rpc_devices``): each server's devices are added
with ``ggml_backend_rpc_add_server`` and registered with ``ggml_backend_register``, before the
model loads; llama.cpp then puts RPC devices first among the devices it offloads to
(src/llama.cpp ``llama_prepare_model_devices``) and splits the offloaded layers between them by
their free memory. Registration is once per process: a wake-up after sleep loads the model
again onto the same devices, over the connections ggml keeps open.
"""

from __future__ import annotations

import os
import threading

import structlog

from worker.host import ggml_backends
from worker.rpc.endpoints import Endpoint
from worker.rpc.handshake import say_hello

__all__ = ["HELLO_TIMEOUT", "add_rpc_servers", "rpc_device_labels"]

_log = structlog.get_logger("corral.worker.rpc")
HELLO_TIMEOUT = 10.0  # seconds for an RPC server to answer HELLO (worker/rpc/handshake.py)

_lock = threading.Lock()
# Device name (``RPC0``) → the label /models shows (``RPC0[10.0.0.2:50052]``).
_labels: dict[str, str] = {}
_added: set[Endpoint] = set()


def add_rpc_servers(endpoints: tuple[Endpoint, ...]) -> None:
    """Register each server's devices, once; ``RpcServerUnavailable`` when one cannot serve.

    Every server is checked before any is registered, so a load that fails for one registers
    none.
    """
    if endpoints:
        # A server lost mid-generation aborts the process (ggml-rpc.cpp RPC_STATUS_ASSERT); ggml
        # would then run gdb for a backtrace, whose last lines the router would quote as the
        # reason instead of ggml's own message. The user's own setting wins.
        os.environ.setdefault("GGML_NO_BACKTRACE", "1")
    with _lock:
        new = [endpoint for endpoint in endpoints if endpoint not in _added]
        for endpoint in new:
            version = say_hello(endpoint, HELLO_TIMEOUT)
            _log.info("rpc server answers", endpoint=str(endpoint), protocol=version)
        for endpoint in new:
            registry = ggml_backends.add_server(str(endpoint))
            names: list[str] = []
            if registry is not None:
                ggml_backends.register(registry)
                names = [
                    ggml_backends.device_name(device)
                    for device in ggml_backends.registry_devices(registry)
                ]
                _labels.update({name: f"{name}[{endpoint}]" for name in names})
            if not names:
                _log.warning("rpc server offers no device", endpoint=str(endpoint))
            _added.add(endpoint)
            _log.info("rpc devices added", endpoint=str(endpoint), devices=names)


def rpc_device_labels() -> dict[str, str]:
    """The registered RPC devices' labels, by device name."""
    with _lock:
        return dict(_labels)
