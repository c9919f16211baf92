"""Rendering ``/metrics`` only reads: a scrape never changes what scheduling decides next."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from router.api.metrics import RequestCounter, render_metrics
from router.capacity.devices import Device, FakeDevices
from router.capacity.memory_budget import MemoryBudget
from router.scheduling.placement.device_planner import DevicePlanner
from router.workers.model_state import ModelState
from tests.support.scheduling_harness import Harness, harness

pytestmark = pytest.mark.anyio

G = 1 << 30


def _snapshot(h: Harness) -> list[Any]:
    """Everything a scheduling decision reads."""
    models = [
        (
            name,
            state.status,
            state.in_flight,
            state.last_used,
            state.peak_memory,
            state.stop_requested,
            state.loads,
            state.failures,
        )
        for name, state in sorted(h.pool.models.items())
    ]
    scheduler = h.scheduler
    return [models, scheduler.evictions, scheduler.queue_depth, scheduler.waits]


async def test_rendering_metrics_twice_changes_nothing() -> None:
    readings = itertools.count(G, G)  # every measurement is more than the last

    def resident(state: ModelState) -> int | None:
        return next(readings) if state.running else None

    async with harness(0, memory=MemoryBudget(100 * G, resident)) as h:
        await h.load("a")
        await h.load("b")
        before = _snapshot(h)
        requests = RequestCounter()
        first = render_metrics(h.pool, h.scheduler, requests)
        second = render_metrics(h.pool, h.scheduler, requests)
        assert _snapshot(h) == before
        # Only the live memory gauge reads the moving measurement; nothing else may differ.
        assert [line for line in first.splitlines() if "memory_bytes{" not in line] == [
            line for line in second.splitlines() if "memory_bytes{" not in line
        ]


async def test_rendering_with_a_steady_measurement_is_identical() -> None:
    async with harness(0, memory=MemoryBudget(100 * G, lambda state: 3 * G)) as h:
        await h.load("a")
        requests = RequestCounter()
        first = render_metrics(h.pool, h.scheduler, requests)
        assert render_metrics(h.pool, h.scheduler, requests) == first
        assert 'corral_model_memory_bytes{model="a"} ' in first


async def test_each_gpus_memory_and_each_models_share_of_it_are_gauges() -> None:
    devices = FakeDevices([Device("CUDA0", 14 * G, 24 * G), Device("CUDA1", 24 * G, 24 * G)])
    planner = DevicePlanner(devices, estimate=lambda entry, ctx: 10 * G)
    async with harness(0, devices=planner) as h:
        await h.load(
            "a", [{"name": "CUDA0", "layers": 31, "model_bytes": 8 * G, "context_bytes": G}]
        )
        await h.load("b")  # reports nothing on a GPU: no per-device gauge of its own
        families = {
            family.name: {tuple(sorted(s.labels.items())): s.value for s in family.samples}
            for family in text_string_to_metric_families(
                render_metrics(h.pool, h.scheduler, RequestCounter())
            )
        }
        assert families["corral_device_memory_total_bytes"] == {
            (("device", "CUDA0"),): 24 * G,
            (("device", "CUDA1"),): 24 * G,
        }
        assert families["corral_device_memory_free_bytes"][(("device", "CUDA0"),)] == 14 * G
        assert families["corral_device_memory_used_bytes"][(("device", "CUDA0"),)] == 10 * G
        assert families["corral_model_device_memory_bytes"] == {
            (("device", "CUDA0"), ("model", "a")): 9 * G
        }
