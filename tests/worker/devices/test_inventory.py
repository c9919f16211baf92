"""ggml's devices as a worker reports them, and llama-server's ``--list-devices``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from corral.children.device_use import DeviceInfo
from worker.devices.inventory import gpu_devices, list_devices_text

MIB = 1 << 20


def test_a_cpu_machine_has_no_gpu_devices() -> None:
    assert gpu_devices() == []


def test_the_listing_is_llama_servers() -> None:
    # common/arg.cpp common_print_available_devices, line for line.
    devices = [
        DeviceInfo("CUDA0", "NVIDIA H200", free=143156 * MIB, total=143771 * MIB),
        DeviceInfo("Vulkan0", "AMD Radeon", free=7 * MIB + 5, total=8 * MIB),
    ]
    assert list_devices_text(devices) == (
        "Available devices:\n"
        "  CUDA0: NVIDIA H200 (143771 MiB, 143156 MiB free)\n"
        "  Vulkan0: AMD Radeon (8 MiB, 7 MiB free)\n"
    )
    assert list_devices_text([]) == "Available devices:\n  (none)\n"


@pytest.mark.parametrize(
    ("fake", "listing"),
    [
        (None, "  (none)\n"),
        # The router's fake GPUs (a test seam) are the worker's too: worker/devices/fake.py.
        (
            "CUDA0=6GiB/8GiB,CUDA1=2GiB/8GiB",
            "  CUDA0: fake (8192 MiB, 6144 MiB free)\n  CUDA1: fake (8192 MiB, 2048 MiB free)\n",
        ),
    ],
)
def test_the_worker_lists_its_devices_and_exits_without_a_model(
    fake: str | None, listing: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CORRAL_FAKE_DEVICES"}
    done = subprocess.run(
        [sys.executable, "-m", "worker", "--list-devices"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env if fake is None else {**env, "CORRAL_FAKE_DEVICES": fake},
    )
    assert (done.returncode, done.stdout) == (0, "Available devices:\n" + listing)
