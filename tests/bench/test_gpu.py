"""bench/gpu.py on a machine without a GPU: it says so and stops; its comparison of ``/models``'
``memory.vram`` with ``nvidia-smi``'s per-process figure, on figures given as both would."""

from __future__ import annotations

import math
import subprocess
import sys

from bench.gpu import vram_against_smi

M = 1 << 20


def test_without_a_gpu_the_benchmark_says_skipped_and_exits_0() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.gpu", "--llama-server", "/nonexistent", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0
    assert "no GPU: skipped" in done.stderr
    assert done.stdout.strip() == '{"skipped": "no GPU"}'


def _entry(status: str, vram: int, buffers: int) -> dict[str, object]:
    return {
        "status": {"value": status},
        "memory": {"rss": 10 * M, "vram": vram, "devices": {"CUDA0": vram}},
        "meta": {
            "devices": [
                {"name": "CPU", "model_bytes": 5 * M, "context_bytes": 0, "compute_bytes": 0},
                {"name": "CUDA0", "model_bytes": buffers, "context_bytes": 0, "compute_bytes": 0},
            ]
        },
    }


def test_each_loaded_model_is_compared_with_its_workers_process() -> None:
    entries = {
        "A": _entry("loaded", 5512 * M, 4920 * M),
        "B": _entry("loaded", 900 * M, 369 * M),
        "C": _entry("unloaded", 0, 0),
    }
    report = vram_against_smi(entries, {"A": 11, "B": 12}, {11: 5512.0, 12: 964.0, 13: 50.0})
    assert report["/models"] == {
        "A gpu_mib": 5512.0,
        "A buffers_mib": 4920.0,
        "B gpu_mib": 900.0,
        "B buffers_mib": 369.0,
    }
    assert report["nvidia-smi"]["A gpu_mib"] == 5512.0
    assert report["nvidia-smi"]["B gpu_mib"] == 964.0
    missing = vram_against_smi({"A": entries["A"]}, {"A": 99}, {})  # the driver lists no such pid
    assert missing["nvidia-smi"]["A gpu_mib"] == 0.0
    assert not math.isnan(missing["/models"]["A gpu_mib"])
