"""A worker on another node as the router's :class:`~router.workers.launcher.ChildProcess`.

The pool and the child supervisor (router/workers/) see a worker started by a node agent
(router/cluster/agent.py) through the same small interface as one they spawned: its lines come
in order through :meth:`RemoteProcess.pump`, the commands and signals go to the agent, which
passes them on to the process on its node. So stopping, escalation, keys and the state machine
are the local code's, not a copy.

A node that dies (its agent's actor is lost) is the pool's local crash: :meth:`RemoteProcess.pump`
ends as for a SIGKILL, and the node is dropped from placement at once through ``lost``
(router/cluster/nodes.py), not at its next listing (docs/scaling.md, "Failover").
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog
from ray.actor import ActorHandle
from ray.exceptions import RayActorError, RayTaskError

from corral.children.environment import child_environment
from corral.children.protocol import ChildLine
from router.cluster.agent import NodeAgent
from router.workers.launcher import ChildProcess

__all__ = ["LostNode", "NodeLauncher", "RemoteProcess"]

_log = structlog.get_logger("corral.cluster")


# Told that the node's agent is lost, and why.
LostNode = Callable[[str], None]


class RemoteProcess:
    def __init__(self, agent: ActorHandle[NodeAgent], pid: int, node: str, lost: LostNode) -> None:
        self._agent = agent
        self.pid = pid  # on its node
        self.node = node
        self._lost = lost
        self._rss: int | None = None

    def resident(self) -> int | None:
        return self._rss  # as the agent read it at the last batch of lines

    async def pump(self, on_line: Callable[[ChildLine], None]) -> int:
        while True:
            try:
                batch = await self._agent.lines.remote(self.pid)
            except RayActorError as exc:  # the node (or its agent) is gone, its workers too
                _log.error("node agent lost", node=self.node, pid=self.pid)
                self._lost(f"its agent was lost: {exc}")
                return -signal.SIGKILL
            self._rss = batch.rss
            for line in batch.lines:
                on_line(line)
            if batch.returncode is not None:
                return int(batch.returncode)

    async def _send(self, command: str, *args: Any) -> None:
        with contextlib.suppress(RayActorError):  # gone: pump() reports it
            await self._agent.send.remote(self.pid, command, *args)

    async def send_exit(self) -> None:
        await self._send("send_exit")

    async def send_load(self, argv: Sequence[str], key: str) -> None:
        await self._send("send_load", list(argv), key)

    async def send_release(self) -> None:
        await self._send("send_release")

    async def send_threads(self, threads: int, threads_batch: int) -> None:
        await self._send("send_threads", threads, threads_batch)

    def signal_group(self, sig: signal.Signals) -> None:
        self._agent.signal.remote(self.pid, int(sig))  # sent now; its answer is not awaited


class NodeLauncher:
    """Launches workers on one node, through its agent."""

    def __init__(self, agent: ActorHandle[NodeAgent], node: str, lost: LostNode) -> None:
        self._agent = agent
        self._node = node
        self._lost = lost

    async def launch(self, argv: Sequence[str], env: Mapping[str, str]) -> ChildProcess:
        # Only what the router adds to a child's environment (the worker's key) crosses: the
        # rest of the router's environment is this box's, not the node's.
        own = child_environment()
        added = {key: value for key, value in env.items() if own.get(key) != value}
        try:
            pid = await self._agent.launch.remote(list(argv), added)
        except RayActorError as exc:  # died since it was placed on: the next load goes elsewhere
            self._lost(f"its agent was lost: {exc}")
            raise OSError(f"on node {self._node}: {exc}") from exc
        except RayTaskError as exc:
            raise OSError(f"on node {self._node}: {exc}") from exc
        return RemoteProcess(self._agent, pid, self._node, self._lost)
