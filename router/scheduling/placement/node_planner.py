"""Which node of the cluster a model loads on, and which node needs room (docs/scaling.md).

With ``--cluster``, every node's agent reports what Corral's workers may hold there
(router/cluster/reports.py: what they hold plus the node's available memory, never more than
its own limit). The rules are the memory budget's (router/capacity/memory_budget.py), per node:
a model is expected to hold what it was measured to hold, else its estimate; a running one holds
what its worker's resident memory says (read by its node's agent).

- **Where**: the node with the most room once the model is counted; a node with too little is
  never chosen while another has enough.
- **Room**: when no node has enough, the node that would have the most once its idle models are
  gone is the one that needs room, and only its idle models are evicted
  (router/scheduling/eviction.py), least recently used first.
- **Copies**: among the nodes with room, one without a copy of the model (``replicas``) first.
- **Alone**: a model that fits on no node even with its idle models gone still loads, on the
  node with the most room, as a model alone does on one machine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from router.capacity.memory_budget import MemoryBudget
from router.workers.model_state import ModelState

__all__ = ["NODE_LABEL", "NodePlanner", "node_label"]

# How a node is named among the places that need room (the device planner's are GPU names).
NODE_LABEL = "node:"


def node_label(node: str) -> str:
    return NODE_LABEL + node


class NodePlanner:
    """``capacities()``: each live node's capacity for Corral's workers, by node name."""

    def __init__(self, capacities: Callable[[], Mapping[str, int]], budget: MemoryBudget) -> None:
        self._capacities = capacities
        self._budget = budget

    def rooms(self, staying: Iterable[ModelState]) -> dict[str, int]:
        """Each node's room left next to the ``staying`` models on it."""
        rooms = dict(self._capacities())
        for state in staying:
            if state.node in rooms:
                rooms[state.node] -= self._budget.held(state)
        return rooms

    def short_of(self, staying: list[ModelState], coming: list[ModelState]) -> set[str] | None:
        """None when a node has room for ``coming``; else the node that needs it (its label)."""
        rooms = self.rooms(staying)
        need = sum(map(self._budget.expected, coming))
        if not rooms or max(rooms.values()) >= need:
            return None  # no node at all: the load fails with that reason, not a wait
        freeable = dict(rooms)
        for state in staying:
            if state.node in freeable and state.in_flight == 0 and not state.entry.pin:
                freeable[state.node] += self._budget.held(state)
        target = max(freeable, key=lambda node: freeable[node])
        if not any(state.node == target for state in staying):
            return None  # alone on the best node, and still short: it loads anyway
        return {node_label(target)}

    def place(self, state: ModelState, running: Iterable[ModelState]) -> str | None:
        """The node ``state`` loads on; None when the cluster has no node (with an agent).
        Among the nodes with room for it, one without a copy of its model first."""
        others = [other for other in running if other is not state]
        rooms = self.rooms(others)
        need = self._budget.expected(state)
        copies = {other.node for other in others if other.name == state.name}
        return max(
            rooms,
            key=lambda node: (rooms[node] >= need, node not in copies, rooms[node]),
            default=None,
        )
