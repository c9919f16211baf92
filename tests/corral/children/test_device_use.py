"""The device contract between a worker's ``ready`` and the router (docs/protocol.md §1)."""

from __future__ import annotations

import msgspec

from corral.children.device_use import DeviceInfo, DeviceUse, OutOfMemory, ready_devices

MIB = 1 << 20


def test_out_of_memory_reads_back_what_it_wrote() -> None:
    oom = OutOfMemory("CUDA0", needed=5120 * MIB, free=3000 * MIB)
    line = oom.format()
    assert line == "out of memory on CUDA0: needs 5120 MiB, 3000 MiB free"
    # As the router finds it: inside the failed worker's last error line.
    assert OutOfMemory.parse(f"failed to load model: {line} (model.gguf)") == oom


def test_a_need_is_rounded_up_so_it_never_reads_as_fitting() -> None:
    assert (
        OutOfMemory("Vulkan1", needed=MIB + 1, free=0).format().endswith("needs 2 MiB, 0 MiB free")
    )


def test_other_reasons_are_no_out_of_memory() -> None:
    assert OutOfMemory.parse("failed to load model: unknown architecture") is None
    assert OutOfMemory.parse("out of memory on CUDA0") is None


def test_ready_devices_decodes_what_a_worker_sends() -> None:
    payload = msgspec.json.decode(
        msgspec.json.encode(
            {
                "id": "m",
                "meta": {
                    "devices": [
                        DeviceUse("CPU", 1, model_bytes=10, context_bytes=20, compute_bytes=30),
                        DeviceUse("CUDA0", 29, model_bytes=1000),
                    ]
                },
                "gpu_devices": [DeviceInfo("CUDA0", "NVIDIA H200", free=5, total=9)],
                "port": 1234,
            }
        )
    )
    uses, gpus = ready_devices(payload)
    assert uses == [DeviceUse("CPU", 1, 10, 20, 30), DeviceUse("CUDA0", 29, 1000, 0, 0)]
    assert gpus == [DeviceInfo("CUDA0", "NVIDIA H200", 5, 9)]


def test_a_wake_ups_empty_ready_has_no_devices() -> None:
    assert ready_devices({}) == ([], [])
