"""What a worker tells the router about devices: where a loaded model's bytes went, which ggml
devices it saw, and why a load ran out of memory (docs/protocol.md §1, ``ready``).

Shared by both ends so they cannot drift apart: the worker encodes these in its ``ready`` payload
(``meta.devices`` entries and ``gpu_devices``) and in the last error line of a load that failed
for memory; the router decodes them with :func:`ready_devices` and :meth:`OutOfMemory.parse`.
Names are ggml's device names (``CUDA0``, ``Vulkan1``, ``CPU``); an RPC device's name is its
server's ``RPC[host:port]`` label. Sizes are bytes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec

__all__ = ["DeviceInfo", "DeviceUse", "OutOfMemory", "ready_devices"]

_MIB = 1 << 20


class DeviceUse(msgspec.Struct, frozen=True):
    """One device's share of a loaded model: its layers and llama.cpp's memory breakdown."""

    name: str
    layers: int  # repeating layers and the output layer placed here (worker/host/layer_placement)
    model_bytes: int = 0  # weights
    context_bytes: int = 0  # KV cache (and recurrent state)
    compute_bytes: int = 0  # compute buffers


class DeviceInfo(msgspec.Struct, frozen=True):
    """A non-CPU ggml device as the worker saw it when it loaded (ggml_backend_dev_memory)."""

    name: str
    description: str
    free: int
    total: int


class OutOfMemory(msgspec.Struct, frozen=True):
    """A load that did not fit: the device, what the model needed there and what was free."""

    device: str
    needed: int
    free: int

    def format(self) -> str:
        """One line, e.g. ``out of memory on CUDA0: needs 5120 MiB, 3000 MiB free``."""
        return (
            f"out of memory on {self.device}: needs {_mib(self.needed)} MiB, "
            f"{_mib(self.free)} MiB free"
        )

    @classmethod
    def parse(cls, reason: str) -> OutOfMemory | None:
        """The out-of-memory line :meth:`format` wrote, found anywhere in ``reason`` (a failed
        worker's last error line); ``None`` for any other reason. Sizes come back in whole MiB."""
        match = _LINE.search(reason)
        if match is None:
            return None
        return cls(match["device"], int(match["needed"]) * _MIB, int(match["free"]) * _MIB)


_LINE = re.compile(
    r"out of memory on (?P<device>\S+): needs (?P<needed>\d+) MiB, (?P<free>\d+) MiB free"
)


def _mib(size: int) -> int:
    # Rounded up: a need shown as less than it is would read as if it fitted.
    return -(-size // _MIB)


def ready_devices(payload: Mapping[str, Any]) -> tuple[list[DeviceUse], list[DeviceInfo]]:
    """A ``ready`` payload's per-device use (``meta.devices``) and the GPUs it saw
    (``gpu_devices``); empty lists where a payload has none (a wake-up's empty ``ready``)."""
    meta = payload.get("meta")
    uses = meta.get("devices", []) if isinstance(meta, Mapping) else []
    return (
        msgspec.convert(uses, list[DeviceUse]),
        msgspec.convert(payload.get("gpu_devices", []), list[DeviceInfo]),
    )
