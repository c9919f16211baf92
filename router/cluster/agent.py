"""The node agent: one per node of the cluster, pinned there (docs/scaling.md, "Cluster").

It runs in a Ray worker process on its node and does there what the router does locally: reads
the node's GPUs (router/capacity/devices.py) and free memory, and starts and stops worker
processes through the same launcher (router/workers/launcher.py), with the router's command line
and its stdout protocol (docs/protocol.md §1). It relays each worker's state and log lines to the
router, which supervises the worker as if it were its own child (router/cluster/remote_process.py).

This module imports no Ray: router/cluster/nodes.py makes the class a Ray actor.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Mapping, Sequence

import psutil

from corral.children.environment import child_environment
from corral.children.protocol import ChildLine
from corral.options.values import parse_size
from router.capacity.devices import device_inventory
from router.cluster.reports import (
    AGENT_ALLOWED_COMMANDS,
    MEMORY_MAX_ENV,
    ChildBatch,
    NodeDevice,
    NodeReport,
)
from router.workers.launcher import WORKER_COMMAND, ChildProcess, SubprocessLauncher, process_rss

__all__ = ["NodeAgent", "node_argv"]

# How long one poll for a worker's lines waits when it says nothing: the router's pump asks again.
_POLL_SECONDS = 1.0


def node_argv(argv: Sequence[str], address: str) -> list[str]:
    """The router's worker command line as this node runs it: this node's Python, and the
    worker listening on the node's cluster address instead of loopback, so that the router
    can reach it (its key still guards it: docs/protocol.md §8)."""
    args = list(argv)
    if tuple(args[1 : len(WORKER_COMMAND)]) == WORKER_COMMAND[1:]:  # the router's python -m worker
        args[0] = sys.executable
    for at in range(len(args) - 1):
        if args[at] == "--host" and args[at + 1] == "127.0.0.1":
            args[at + 1] = address
    return args


class _Child:
    """One worker on this node: what it said that the router has not fetched yet."""

    def __init__(self, process: ChildProcess) -> None:
        self.process = process
        self.pending: list[ChildLine] = []
        self.returncode: int | None = None
        self.changed = asyncio.Event()

    def said(self, line: ChildLine) -> None:
        self.pending.append(line)
        self.changed.set()

    async def watch(self) -> None:
        self.returncode = await self.process.pump(self.said)
        self.changed.set()


class NodeAgent:
    def __init__(self, name: str, address: str) -> None:
        self._name = name
        self._address = address
        self._launcher = SubprocessLauncher()
        self._children: dict[int, _Child] = {}
        self._watching: set[asyncio.Task[None]] = set()
        limit = os.environ.get(MEMORY_MAX_ENV, "").strip()
        self._memory_max = parse_size(limit) if limit else None

    def report(self) -> NodeReport:
        memory = psutil.virtual_memory()
        devices = [NodeDevice(d.name, d.total, d.free) for d in device_inventory().devices()]
        held = sum(process_rss(pid) or 0 for pid in self._children)
        return NodeReport(
            self._name,
            self._address,
            memory.total,
            memory.available,
            self._memory_max,
            held,
            devices,
        )

    async def launch(self, argv: list[str], env: Mapping[str, str]) -> int:
        """Start a worker; ``env`` is what the router adds to a child's environment (its key),
        laid over this node's own (child_environment: its lifeline is this agent)."""
        process = await self._launcher.launch(
            node_argv(argv, self._address), {**child_environment(), **env}
        )
        child = self._children[process.pid] = _Child(process)
        task = asyncio.get_running_loop().create_task(child.watch())
        self._watching.add(task)
        task.add_done_callback(self._watching.discard)
        return process.pid

    async def lines(self, pid: int) -> ChildBatch:
        """The worker's lines since the last call (waiting a little for some); its exit code
        once it ended and everything it said was fetched."""
        child = self._children[pid]
        if not child.pending and child.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(child.changed.wait(), _POLL_SECONDS)
        child.changed.clear()
        lines, child.pending = child.pending, []
        ended = child.returncode is not None and not child.pending
        if ended:
            del self._children[pid]
        return ChildBatch(lines, child.returncode if ended else None, process_rss(pid))

    async def send(self, pid: int, command: str, *args: object) -> None:
        """One of the worker commands of router/workers/launcher.py's ChildProcess."""
        child = self._children.get(pid)
        if child is None or command not in AGENT_ALLOWED_COMMANDS:
            return  # gone already: the router learns it from lines()
        await getattr(child.process, command)(*args)

    def signal(self, pid: int, signum: int) -> None:
        child = self._children.get(pid)
        if child is not None:
            child.process.signal_group(signal.Signals(signum))
