"""Which node a model loads on with ``--cluster``, and which node needs room
(router/scheduling/placement/node_planner.py): by what each node's agent reports, per node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from router.capacity.memory_budget import MemoryBudget
from router.capacity.placement import Placement
from router.catalogue.catalogue import CatalogueEntry
from router.scheduling.placement.node_planner import NodePlanner, node_label
from router.workers.model_state import ModelFields, ModelState, Status
from tests.support.scheduling_harness import harness

G = 1 << 30


def _model(name: str, memory: int, node: str | None = None, **fields: Any) -> ModelState:
    """A model declaring ``memory`` (the preset's key), running on ``node`` if one is given."""
    entry = CatalogueEntry(name, Path(f"{name}.gguf"), "models_dir", memory=memory)
    if node is not None:
        fields |= {"status": Status.LOADED, "placement": Placement(node=node)}
    return ModelState(ModelFields(entry, [], **fields))


def _planner(capacities: dict[str, int]) -> NodePlanner:
    return NodePlanner(lambda: capacities, MemoryBudget(0))


def test_a_model_goes_to_the_node_with_the_most_room_never_to_a_full_one() -> None:
    planner = _planner({"head": 1 << 20, "b": 4 * G, "c": 8 * G})
    staying = [_model("big", 6 * G, "c")]
    coming = _model("new", 1 * G)
    assert planner.short_of(staying, [coming]) is None
    assert planner.place(coming, staying) == "b"  # 4 G free there, 2 G on c, 1 M on the head


def test_when_no_node_has_room_the_node_that_can_make_it_evicts() -> None:
    planner = _planner({"b": 4 * G, "c": 8 * G})
    idle_on_c = _model("idle", 6 * G, "c")
    busy_on_b = _model("busy", 3 * G, "b", in_flight=1)
    short = planner.short_of([idle_on_c, busy_on_b], [_model("new", 5 * G)])
    assert short == {node_label("c")}  # b's model is busy: only c can make 5 G


def test_a_model_that_fits_no_node_even_emptied_loads_alone() -> None:
    planner = _planner({"b": 1 * G, "c": 2 * G})
    assert planner.short_of([_model("other", 1 * G, "b")], [_model("huge", 9 * G)]) is None


def test_without_nodes_there_is_nowhere_to_place() -> None:
    planner = _planner({})
    assert planner.short_of([], [_model("new", G)]) is None
    assert planner.place(_model("new", G), []) is None


@pytest.mark.anyio
async def test_room_is_made_on_the_node_that_can_have_it_not_by_global_lru() -> None:
    """y, the least recently used, is on the node that could not hold z even emptied; x goes."""
    nodes = {"b": 4 * G, "c": 5 * G}
    three, four = {"memory": 3 * G}, {"memory": 4 * G}
    async with harness(0, names="xyz", nodes=nodes, x=three, y=three, z=four) as h:
        x = await h.load("x")
        y = await h.load("y")
        assert (x.node, y.node) == ("c", "b")  # each where the most room was
        h.used_at(y, 5.0)
        h.used_at(x, 10.0)
        z = await h.load("z")
        assert z.node == "c"
        assert x.status is Status.UNLOADED
        assert y.status is Status.LOADED
