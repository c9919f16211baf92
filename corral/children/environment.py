"""What a child (worker or download) inherits from the router: its environment without secrets.

Workers serve loopback only, and only to the router: each gets a key of its own
(``corral/children/worker_key.py``, docs/protocol.md §8), never the router's API keys; the hub
token is for download children only, which get it back explicitly.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from corral.options.table import parse_size

__all__ = [
    "DEFAULT_MAX_BODY",
    "MAX_BODY_ENV",
    "ROUTER_PID_ENV",
    "SECRET_ENV",
    "child_environment",
    "max_body_from",
]

# Set by the router in every child it starts: the child arms its lifeline only when it is there.
ROUTER_PID_ENV = "CORRAL_ROUTER_PID"
# The router's --max-body, in bytes. The router sets it for its workers, so a worker behind it
# never refuses a body the router accepted; a worker started by hand reads it too.
MAX_BODY_ENV = "CORRAL_MAX_BODY"
DEFAULT_MAX_BODY = 64 << 20

SECRET_ENV = frozenset({
    "LLAMA_API_KEY", "LLAMA_ARG_API_KEY_FILE", "LLAMA_ARG_SSL_KEY_FILE",
    "LLAMA_ARG_SSL_CERT_FILE", "CORRAL_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
    # A trace collector's credentials (docs/operations.md, Traces): the router's to send.
    "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
})  # fmt: skip


def child_environment() -> dict[str, str]:
    """The router's environment minus its secrets, plus its pid for the child's lifeline."""
    env = {key: value for key, value in os.environ.items() if key not in SECRET_ENV}
    env[ROUTER_PID_ENV] = str(os.getpid())
    # CUDA numbers GPUs fastest first unless told otherwise; NVML, which the router reads
    # (router/capacity/devices.py), numbers them in PCI bus order. One order for both, so that
    # the CUDA1 the router chose is the CUDA1 the worker loads on.
    env.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    return env


def max_body_from(env: Mapping[str, str]) -> int:
    """The body limit :data:`MAX_BODY_ENV` sets (a size such as ``64M``), else the default."""
    value = env.get(MAX_BODY_ENV, "").strip()
    return parse_size(value) if value else DEFAULT_MAX_BODY
