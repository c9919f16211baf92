"""ggml's devices as a worker reports them, and llama-server's ``--list-devices``."""

from __future__ import annotations

import subprocess
import sys

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


def test_the_worker_lists_its_devices_and_exits_without_a_model() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "worker", "--list-devices"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "Available devices:\n  (none)\n")
