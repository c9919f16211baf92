"""The secret that lets only the router call its workers (docs/protocol.md §8).

A worker listens on loopback, where every local user and process can reach its port. So the
router makes a random key for each worker it starts and hands it over by a channel other users
cannot read: the new process's environment (``/proc/PID/environ`` is readable by the same user
only; the command line is not a secret, ``/proc/PID/cmdline`` is world-readable), or a spare's
load command on its stdin pipe. The router sends the key in :data:`WORKER_KEY_HEADER` with every
request; the worker refuses any request without it (``worker/host/access.py``).
"""

from __future__ import annotations

import secrets
from typing import Final

__all__ = ["WORKER_KEY_ENV", "WORKER_KEY_HEADER", "new_worker_key"]

WORKER_KEY_ENV: Final = "CORRAL_WORKER_KEY"
# Lower case: the router writes it so, and ASGI servers hand header names over in lower case.
WORKER_KEY_HEADER: Final = b"x-corral-worker-key"


def new_worker_key() -> str:
    """A fresh key: 256 random bits, URL-safe (a header value as it is)."""
    return secrets.token_urlsafe(32)
