"""What crosses the cluster between the router and a node agent (docs/scaling.md, "Cluster").

Ray pickles these; they are msgspec Structs like every other wire of Corral's, so both ends read
one declared shape.
"""

from __future__ import annotations

import msgspec

from corral.children.protocol import ChildLine

__all__ = ["AGENT_ALLOWED_COMMANDS", "MEMORY_MAX_ENV", "ChildBatch", "NodeDevice", "NodeReport"]

# A node's own limit on what Corral's workers there may hold (a size such as ``8G``), set in the
# environment of that node's ``ray start``: the agent reports no more room than this.
MEMORY_MAX_ENV = "CORRAL_NODE_MEMORY_MAX"
# The worker commands (router/workers/launcher.py's ChildProcess) an agent relays to a worker.
AGENT_ALLOWED_COMMANDS = frozenset({"send_exit", "send_load", "send_release", "send_threads"})


class NodeDevice(msgspec.Struct, frozen=True):
    """One GPU of the node, as the router reads its own (router/capacity/devices.py)."""

    name: str
    total: int
    free: int


class NodeReport(msgspec.Struct, frozen=True):
    """A node's memory as its agent reads it now."""

    name: str
    address: str
    memory_total: int  # host memory
    memory_available: int  # host memory free for new workers (the kernel's "available")
    memory_max: int | None  # MEMORY_MAX_ENV, if set
    held: int  # what Corral's workers on the node hold (their resident memory)
    devices: list[NodeDevice] = []

    @property
    def capacity(self) -> int:
        """What Corral's workers may hold on the node in all: what they hold plus what is
        available, never more than its limit."""
        room = self.held + self.memory_available
        return room if self.memory_max is None else min(room, self.memory_max)


class ChildBatch(msgspec.Struct, frozen=True):
    """What a worker said since the last batch; ``returncode`` once it exited."""

    lines: list[ChildLine]
    returncode: int | None
    rss: int | None
