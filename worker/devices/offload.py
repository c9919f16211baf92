"""One model's offload to the GPUs, load after load (a wake-up loads again): the GPU flags as
parameters, llama-server's fit before the load, and what came of it after.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import structlog

from corral.children.fake_devices import fake_devices
from worker.devices.fake import as_placed, on_real_devices
from worker.devices.fit import ExtraModel, FitStatus, fit_params
from worker.devices.params import DeviceParams
from worker.devices.settings import GpuSettings
from worker.host.llama_bindings import llama_cpp

__all__ = ["Offload"]

_log = structlog.get_logger("corral.worker.offload")


class Offload:
    def __init__(self, gpu: GpuSettings, n_gpu_layers: int, model: str) -> None:
        self.given = gpu  # as the flags say
        # What llama.cpp gets: on fake GPUs (a test seam) the CPU, reported as if placed.
        self._fakes = fake_devices()
        self.gpu = gpu if self._fakes is None else on_real_devices(gpu)
        self.n_gpu_layers = n_gpu_layers  # as given: -1 auto, -2 all, or a number
        self.model = model
        self._told = False

    def prepare(
        self,
        path: str,
        model_params: Any,
        context_params: Any,
        draft: Path | None = None,
        draft_layers: int = -1,
    ) -> None:
        """Set the GPU parameters and fit them, as llama-server does before it loads: with a
        draft model, both together (its context follows the model's)."""
        # Kept on self: the parameters point into its arrays.
        self._params = DeviceParams(self.gpu)
        self._params.apply(model_params, context_params)
        extra = None if draft is None else self._draft(draft, draft_layers, context_params)
        self._status = fit_params(path, model_params, context_params, self._params, extra)
        self._fitted_layers = int(model_params.n_gpu_layers)

    def _draft(self, path: Path, layers: int, context_params: Any) -> ExtraModel:
        # As worker/speculative/draft_model.py will load it.
        model = llama_cpp.llama_model_default_params()
        model.n_gpu_layers = layers
        context = llama_cpp.llama_context_default_params()
        context.n_seq_max = context_params.n_seq_max
        context.n_batch = context.n_ubatch = context_params.n_batch
        context.kv_unified = False
        self._draft_params = DeviceParams(self.gpu.for_draft())
        self._draft_params.apply(model, context)
        self._draft_structs = (str(path).encode(), model, context)  # alive through the fit
        return ExtraModel(
            self._draft_structs[0], ctypes.pointer(model), ctypes.pointer(context), False
        )

    def placed(self, devices: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``meta.devices`` of a load: as llama.cpp placed it, or as told on fake GPUs."""
        if self._fakes is None:
            return devices
        return as_placed(devices, self.given, self.n_gpu_layers, self._fakes)

    def report(self, devices: list[dict[str, Any]], gpus: int) -> dict[str, Any]:
        """``meta.fit`` (docs/api.md): what the fit decided, and the layers left on the CPU
        although every layer was asked for the GPUs (``-ngl`` auto or all, some GPU seen);
        those are logged once, not again on every wake."""
        cpu_layers = next((d["layers"] for d in devices if d["name"] == "CPU"), 0)
        wanted_all = self.n_gpu_layers < 0 and gpus > 0 and self.given.devices != ("none",)
        spilled = cpu_layers if wanted_all else 0
        if spilled and not self._told:
            self._told = True
            _log.warning(
                "model does not fit in GPU memory: some layers run on the CPU",
                model=self.model,
                cpu_layers=spilled,
                devices=devices,
            )
        return {
            "status": FitStatus(self._status).name.lower(),
            "n_gpu_layers": self._fitted_layers,
            "spilled_layers": spilled,
        }
