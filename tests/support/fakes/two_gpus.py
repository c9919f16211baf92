"""A model split over two fake 24 GiB GPUs, and the device report its worker sent: what the
listings that read a worker's memory (``GET /models``, Ollama's ``/api/ps``) are tested on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from router.capacity.devices import Device, FakeDevices
from router.scheduling.placement.device_planner import DevicePlanner
from router.workers.model_state import ModelState
from tests.support.scheduling_harness import Harness, harness

__all__ = ["SplitModel", "split_over_two_gpus"]

G = 1 << 30


@dataclass
class SplitModel:
    harness: Harness
    devices: FakeDevices  # the inventory, whose per-process counts a test may set
    planner: DevicePlanner
    report: list[dict[str, Any]]  # where the worker said its bytes went (DeviceUse fields)
    state: ModelState  # model "a", loaded


@asynccontextmanager
async def split_over_two_gpus() -> AsyncIterator[SplitModel]:
    """Model ``a``, 30 GiB by the planner's estimate (so on no GPU alone), loaded over two GPUs
    with 24 GiB free each; its worker reports a layer on the CPU and fifteen on each GPU, with
    1 GiB of context on CUDA0 and 256 MiB of compute buffers on CUDA1: 25.25 GiB of VRAM."""
    devices = FakeDevices([Device("CUDA0", 24 * G, 24 * G), Device("CUDA1", 24 * G, 24 * G)])
    planner = DevicePlanner(devices, most_resident=1, estimate=lambda entry, ctx: 30 * G)
    report: list[dict[str, Any]] = [
        {"name": "CPU", "layers": 1, "model_bytes": G // 2},
        {"name": "CUDA0", "layers": 15, "model_bytes": 12 * G, "context_bytes": G},
        {"name": "CUDA1", "layers": 15, "model_bytes": 12 * G, "compute_bytes": G // 4},
    ]
    async with harness(1, names="a", devices=planner) as h:
        state = await h.load("a", report)
        yield SplitModel(h, devices, planner, report, state)
