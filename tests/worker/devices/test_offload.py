"""What ``meta.fit`` says after a load, and the one warning for a model too big for the GPUs.

The layer counts are given as a GPU load would report them (there is no GPU here); the fit
itself runs on a real model (tests/worker/devices/test_fit.py).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from structlog.testing import capture_logs

from worker.devices.offload import Offload
from worker.devices.settings import GpuSettings
from worker.host.llama_bindings import llama_cpp

_SPILLED = [{"name": "CPU", "layers": 5}, {"name": "CUDA0", "layers": 20}]


def _prepared(models_dir: Path, gpu: GpuSettings, n_gpu_layers: int) -> Offload:
    offload = Offload(gpu, n_gpu_layers, "alpha")
    model, context = (
        llama_cpp.llama_model_default_params(),
        llama_cpp.llama_context_default_params(),
    )
    offload.prepare(str(models_dir / "alpha.gguf"), model, context)
    return offload


def _warnings(logs: list[MutableMapping[str, Any]]) -> list[MutableMapping[str, Any]]:
    return [entry for entry in logs if entry["log_level"] == "warning"]


def test_layers_left_on_the_cpu_are_reported_and_logged_once(models_dir: Path) -> None:
    offload = _prepared(models_dir, GpuSettings(), -1)
    with capture_logs() as logs:
        first = offload.report(_SPILLED, gpus=1)
        again = offload.report(_SPILLED, gpus=1)  # a wake-up's load
    assert first == again == {"status": "off", "n_gpu_layers": -1, "spilled_layers": 5}
    [warning] = _warnings(logs)
    assert warning["cpu_layers"] == 5


def test_layers_the_user_kept_on_the_cpu_are_no_spill(models_dir: Path) -> None:
    for gpu, layers, gpus in [
        (GpuSettings(), 20, 1),  # -ngl 20
        (GpuSettings(), -1, 0),  # no GPU at all: every layer is on the CPU, as asked
        (GpuSettings(devices=("none",)), -1, 1),  # --device none
    ]:
        with capture_logs() as logs:
            report = _prepared(models_dir, gpu, layers).report(_SPILLED, gpus=gpus)
        assert report["spilled_layers"] == 0
        assert _warnings(logs) == []
