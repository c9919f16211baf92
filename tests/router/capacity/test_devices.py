"""The device inventory (router/capacity/devices.py): the fake a test selects by environment, NVML
on a machine without an NVIDIA driver (this one), and what workers report as the fallback."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from corral.children.device_use import DeviceInfo
from router.capacity.devices import (
    Device,
    FakeDevices,
    NoDevices,
    NvmlDevices,
    ReportedDevices,
    _visible_handle,
    device_inventory,
    parse_fake_devices,
)

G, M = 1 << 30, 1 << 20


def test_the_fake_is_chosen_by_environment_with_each_devices_free_and_total() -> None:
    inventory = device_inventory({"CORRAL_FAKE_DEVICES": "CUDA0=20GiB/24GiB, CUDA1=512MiB/8GiB"})
    assert inventory.devices() == [
        Device("CUDA0", 20 * G, 24 * G, "fake"),
        Device("CUDA1", 512 * M, 8 * G, "fake"),
    ]
    assert inventory.devices()[0].used == 4 * G


@pytest.mark.parametrize("spec", ["CUDA0", "CUDA0=24GiB", "=1G/2G", "CUDA0=lots/24GiB"])
def test_a_fake_spec_that_is_not_name_free_total_is_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="CORRAL_FAKE_DEVICES"):
        parse_fake_devices(spec)


def test_without_an_nvidia_driver_nvml_sees_no_devices_and_raises_nothing() -> None:
    # nvidia-ml-py is installed here, the driver's libnvidia-ml is not: nvmlInit fails.
    assert NvmlDevices({}).devices() == []
    assert isinstance(device_inventory({}), NvmlDevices)


def test_other_back_ends_come_from_what_the_workers_reported() -> None:
    reported = [
        DeviceInfo("Vulkan0", "Radeon 780M", 6 * G, 8 * G),
        DeviceInfo("RPC0[10.0.0.2:50052]", "RPC", 20 * G, 24 * G),  # another machine's
    ]
    assert ReportedDevices(NoDevices(), lambda: reported).devices() == [
        Device("Vulkan0", 6 * G, 8 * G, "Radeon 780M")
    ]
    nvidia = FakeDevices([Device("CUDA0", G, 2 * G)])
    assert ReportedDevices(nvidia, lambda: reported).devices() == nvidia.devices()


def test_cuda_visible_devices_picks_and_orders_nvml_devices_as_cuda_numbers_them() -> None:
    handles = ["gpu0", "gpu1", "gpu2"]
    uuids = {"gpu0": "GPU-aaaa", "gpu1": "GPU-bbbb", "gpu2": "GPU-cccc"}
    nvml: Any = SimpleNamespace(nvmlDeviceGetUUID=lambda handle: uuids[handle])
    assert [_visible_handle(nvml, handles, item) for item in ["2", "0"]] == ["gpu2", "gpu0"]
    assert _visible_handle(nvml, handles, "GPU-bb") == "gpu1"
    assert _visible_handle(nvml, handles, "7") is None
