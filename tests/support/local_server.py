"""A standard-library HTTP server answering on loopback from its own thread, for the tests that
need something at the other end of a URL: a media host, a preset's "attacker", a proxy target."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from socketserver import BaseServer
from typing import TypeVar

__all__ = ["serving"]

S = TypeVar("S", bound=BaseServer)


@contextmanager
def serving(server: S) -> Iterator[S]:
    """``server`` answering until the block ends, then shut down and its socket closed."""
    # shutdown() returns once the loop next polls: at the default half second, every server's
    # end was half a second of the suite spent waiting.
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
