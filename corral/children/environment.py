"""What a child (worker or download) inherits from the router: its environment without secrets.

Workers serve loopback only, with no key (docs/protocol.md §8); the hub token is for download
children only, which get it back explicitly.
"""

from __future__ import annotations

import os

__all__ = ["ROUTER_PID_ENV", "SECRET_ENV", "child_environment"]

# Set by the router in every child it starts: the child arms its lifeline only when it is there.
ROUTER_PID_ENV = "CORRAL_ROUTER_PID"

SECRET_ENV = frozenset({
    "LLAMA_API_KEY", "LLAMA_ARG_API_KEY_FILE", "LLAMA_ARG_SSL_KEY_FILE",
    "LLAMA_ARG_SSL_CERT_FILE", "CORRAL_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
})  # fmt: skip


def child_environment() -> dict[str, str]:
    """The router's environment minus its secrets, plus its pid for the child's lifeline."""
    env = {key: value for key, value in os.environ.items() if key not in SECRET_ENV}
    env[ROUTER_PID_ENV] = str(os.getpid())
    return env
