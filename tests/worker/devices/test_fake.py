"""A worker on fake GPUs (``CORRAL_FAKE_DEVICES``): it loads on the CPU and reports the model as
placed where it was told (worker/devices/fake.py); it lists them as its GPUs
(tests/worker/devices/test_inventory.py). The router's side, over real workers:
tests/router/capacity/test_fake_gpus_e2e.py."""

from __future__ import annotations

from typing import Any

from corral.children.device_use import DeviceInfo
from worker.devices.fake import as_placed, on_real_devices
from worker.devices.settings import GpuSettings

G, M = 1 << 30, 1 << 20
FAKES = [DeviceInfo("CUDA0", "fake", 6 * G, 8 * G), DeviceInfo("CUDA1", "fake", 2 * G, 8 * G)]
# A load on the CPU: 31 layers (30 repeating and the output layer), as llama.cpp logged them.
ON_CPU = [{"name": "CPU", "layers": 31, "model_bytes": 310 * M, "context_bytes": 62 * M,
           "compute_bytes": 31 * M}]  # fmt: skip


def _by_name(devices: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for d in devices}


def test_a_model_told_to_go_to_one_fake_gpu_is_reported_there() -> None:
    placed = _by_name(as_placed(ON_CPU, GpuSettings(devices=("CUDA1",)), -1, FAKES))
    assert placed["CUDA1"] == {"name": "CUDA1", "layers": 31, "model_bytes": 310 * M,
                               "context_bytes": 62 * M, "compute_bytes": 31 * M}  # fmt: skip
    assert placed["CPU"]["layers"] == placed["CPU"]["model_bytes"] == 0
    assert "CUDA0" not in placed


def test_a_split_follows_the_tensor_split_else_each_devices_free_memory() -> None:
    told = GpuSettings(devices=("CUDA0", "CUDA1"), tensor_split=(2.0, 1.0))
    by_split = _by_name(as_placed(ON_CPU, told, -1, FAKES))
    assert (by_split["CUDA0"]["layers"], by_split["CUDA1"]["layers"]) == (21, 10)
    by_free = _by_name(as_placed(ON_CPU, GpuSettings(), -1, FAKES))  # every fake, 6:2 free
    assert (by_free["CUDA0"]["layers"], by_free["CUDA1"]["layers"]) == (23, 8)
    for placed in (by_split, by_free):  # not a byte lost or made up
        assert sum(d["model_bytes"] for d in placed.values()) == 310 * M


def test_layers_kept_on_the_cpu_stay_there() -> None:
    partial = _by_name(as_placed(ON_CPU, GpuSettings(devices=("CUDA0",)), 11, FAKES))
    assert (partial["CPU"]["layers"], partial["CUDA0"]["layers"]) == (20, 11)
    assert partial["CUDA0"]["model_bytes"] == 110 * M
    for gpu, layers in [(GpuSettings(), 0), (GpuSettings(devices=("none",)), -1)]:
        assert as_placed(ON_CPU, gpu, layers, FAKES) == ON_CPU
    assert as_placed(ON_CPU, GpuSettings(devices=("Vulkan0",)), -1, FAKES) == ON_CPU


def test_llama_cpp_gets_the_cpu_and_no_split() -> None:
    real = on_real_devices(GpuSettings(devices=("CUDA0", "CUDA1"), tensor_split=(1.0, 1.0)))
    assert (real.devices, real.tensor_split, real.for_draft().devices) == (("none",), (), ("none",))
