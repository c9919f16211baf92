"""The router's view of the Ray cluster it was given: its live nodes, an agent on each.

``corral serve --cluster`` joins the cluster as a driver (it starts nothing of Ray's own), then
every few seconds lists the cluster's live nodes, starts a node agent (router/cluster/agent.py)
pinned to each new one and asks each agent what its node has room for. A node whose agent cannot
be reached is dropped until it answers again; only nodes of this cluster are ever placed on
(docs/scaling.md, "Security").

A node whose agent is lost (router/cluster/remote_process.py, or a report that fails) is dropped at
once, and gets no new agent while Ray still lists it alive, for a while: a dead node stays listed
until Ray's health checks give up on it, and an agent started there would only wait
(docs/scaling.md, "Failover").

A node is named by a custom resource ``corral:NAME`` given to its ``ray start``
(``--resources '{"corral:gpu-a": 1}'``), else by its address and the start of its Ray id.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import anyio
import ray
import structlog
from ray.actor import ActorHandle
from ray.exceptions import RayError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from router.cluster.agent import NodeAgent
from router.cluster.remote_process import NodeLauncher
from router.cluster.reports import NodeReport
from router.workers.launcher import ChildProcess, WorkerLauncher

__all__ = ["NODE_RESOURCE_PREFIX", "ClusterNodes", "node_name"]

_log = structlog.get_logger("corral.cluster")
NODE_RESOURCE_PREFIX = "corral:"
_REFRESH_SECONDS = 2.0
# A new agent's first report waits for its Ray worker process to start.
_REPORT_TIMEOUT = 30.0
# How long a node whose agent was lost gets no new one while Ray still lists it alive.
_LOST_SECONDS = 30.0


def node_name(node: Mapping[str, Any]) -> str:
    """A node's name: its ``corral:NAME`` resource, else its address and Ray id's start."""
    for resource in node.get("Resources", {}):
        if resource.startswith(NODE_RESOURCE_PREFIX) and len(resource) > len(NODE_RESOURCE_PREFIX):
            return str(resource[len(NODE_RESOURCE_PREFIX) :])
    return f"{node['NodeManagerAddress']}-{str(node['NodeID'])[:8]}"


@dataclass(slots=True)
class _Agent:
    node_id: str
    handle: ActorHandle[NodeAgent]


class _NoNode:
    """The launcher when the placement named no node: the cluster has none with an agent."""

    async def launch(self, argv: Sequence[str], env: Mapping[str, str]) -> ChildProcess:
        raise OSError("no node of the cluster can take it (none has a node agent yet)")


class ClusterNodes:
    def __init__(self, address: str) -> None:
        self._address = address
        self._agents: dict[str, _Agent] = {}
        self._lost: dict[str, float] = {}  # node id -> when its agent was lost (monotonic)
        self.reports: dict[str, NodeReport] = {}

    def connect(self) -> None:
        """Join the cluster as a driver; raises if it cannot be reached."""
        ray.init(
            address=self._address,
            namespace="corral",
            log_to_driver=False,  # workers' lines reach the router's log through their agents
            logging_level=logging.WARNING,
            configure_logging=False,
        )
        _log.info("joined the cluster", address=self._address)

    def close(self) -> None:
        """Leave the cluster: the agents (not detached) and their workers end with the driver."""
        ray.shutdown()

    def capacities(self) -> dict[str, int]:
        """Each node's capacity for Corral's workers
        (router/scheduling/placement/node_planner.py)."""
        return {name: report.capacity for name, report in self.reports.items()}

    def launcher(self, node: str | None) -> WorkerLauncher:
        agent = self._agents.get(node) if node is not None else None
        if node is None or agent is None:
            return _NoNode()
        return NodeLauncher(agent.handle, node, lambda why: self._lose(node, agent, why))

    def _lose(self, name: str, agent: _Agent, why: str) -> None:
        """The node's agent is gone (a call to it failed): no placement goes there any more."""
        if self._agents.get(name) is agent:  # not an agent started there since
            self._lost[agent.node_id] = time.monotonic()
            self._drop(name, why)

    async def run(self) -> None:
        while True:
            try:
                await self.refresh()
            except Exception:  # the cluster unreachable for now: the router serves on
                _log.exception("could not list the cluster's nodes")
            await anyio.sleep(_REFRESH_SECONDS)

    async def refresh(self) -> None:
        """Agents for new nodes, none for gone ones, and every agent's report."""
        nodes = await anyio.to_thread.run_sync(ray.nodes)
        alive = {str(node["NodeID"]): node for node in nodes if node.get("Alive")}
        for name, agent in list(self._agents.items()):
            if agent.node_id not in alive:
                self._drop(name, "the node left the cluster")
        now = time.monotonic()
        self._lost = {
            node_id: at
            for node_id, at in self._lost.items()
            if node_id in alive and now - at < _LOST_SECONDS
        }
        known = {agent.node_id for agent in self._agents.values()} | set(self._lost)
        for node_id, node in alive.items():
            if node_id not in known:
                self._start_agent(node_id, node)
        async with anyio.create_task_group() as group:
            for name, agent in list(self._agents.items()):
                group.start_soon(self._report, name, agent)

    def _start_agent(self, node_id: str, node: Mapping[str, Any]) -> None:
        name = node_name(node)
        if name in self._agents:
            _log.warning("two nodes have one name: the second is not used", node=name)
            return
        actor = ray.remote(NodeAgent).options(
            num_cpus=0,  # an agent takes none of the node's CPUs from Ray's other work
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
        )
        address = str(node["NodeManagerAddress"])
        handle = cast("ActorHandle[NodeAgent]", actor.remote(name, address))
        self._agents[name] = _Agent(node_id, handle)
        _log.info("node agent started", node=name, address=address)

    async def _report(self, name: str, agent: _Agent) -> None:
        try:
            with anyio.fail_after(_REPORT_TIMEOUT):
                report = await agent.handle.report.remote()
        except (RayError, TimeoutError) as exc:
            self._lose(name, agent, f"its agent did not report: {exc}")
            return
        if self._agents.get(name) is not agent:
            return  # dropped meanwhile
        if name not in self.reports:
            _log.info("node ready", node=name, capacity=report.capacity)
        self.reports[name] = report

    def _drop(self, name: str, why: str) -> None:
        agent = self._agents.pop(name, None)
        if agent is not None:
            _log.warning("node not used", node=name, reason=why)
            # Its workers end with it (their lifeline is the agent): none is left unwatched.
            ray.kill(agent.handle)
        self.reports.pop(name, None)
