"""llama.cpp's own fit (common/fit.cpp), called as llama-server calls it, on a real tiny model.

There is no GPU here, so the fit sees only the host: llama-server's --fit on a CPU compares the
model with the host's total memory. A margin as large as that memory leaves no room, which
shows the fit's decisions (the context shrunk toward --fit-ctx only when -c is unset).
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import pytest

from worker.devices.fit import ExtraModel, FitStatus, common_fit, fit_params, llama_common
from worker.devices.params import DeviceParams
from worker.devices.settings import GpuSettings
from worker.host import ggml_backends
from worker.host.llama_bindings import llama_cpp

_TRAINED_CTX = 2048  # tests/support/files/tiny_gguf.py


@pytest.fixture
def alpha(models_dir: Path) -> str:
    return str(models_dir / "alpha.gguf")


def _params(n_ctx: int, *, unified: bool = True) -> tuple[Any, Any]:
    model = llama_cpp.llama_model_default_params()
    context = llama_cpp.llama_context_default_params()
    context.n_ctx, context.n_seq_max, context.kv_unified = n_ctx, 4, unified
    return model, context


def _host_mib() -> int:
    [(cpu, _)] = [d for d in ggml_backends.devices() if d[1] == ggml_backends.DEVICE_TYPE_CPU]
    return ggml_backends.device_memory(cpu)[1] >> 20


def _fit(path: str, gpu: GpuSettings, n_ctx: int, **kwargs: bool) -> tuple[FitStatus, Any, Any]:
    model, context = _params(n_ctx, **kwargs)
    buffers = DeviceParams(gpu)
    buffers.apply(model, context)
    return common_fit(path, model, context, buffers), model, context


def test_the_bindings_ship_llama_common() -> None:
    assert llama_common() is not None


def test_an_unset_context_is_the_trained_one_when_it_fits(alpha: str) -> None:
    status, model, context = _fit(alpha, GpuSettings(), 0)
    assert status == FitStatus.SUCCESS
    assert (context.n_ctx, model.n_gpu_layers) == (_TRAINED_CTX, -1)


def test_without_a_unified_cache_each_slot_gets_the_trained_context(alpha: str) -> None:
    status, _, context = _fit(alpha, GpuSettings(), 0, unified=False)
    assert (status, context.n_ctx) == (FitStatus.SUCCESS, 4 * _TRAINED_CTX)


def test_no_room_shrinks_an_unset_context_to_fit_ctx(alpha: str) -> None:
    gpu = GpuSettings(fit_target_mib=(_host_mib(),), fit_ctx=512)
    status, model, context = _fit(alpha, gpu, 0)
    # As llama-server: the context goes down to --fit-ctx, and with nothing else to move on a
    # host alone the fit reports that it could not fit.
    assert (status, context.n_ctx, model.n_gpu_layers) == (FitStatus.FAILURE, 512, -1)


def test_a_given_context_is_never_changed(alpha: str) -> None:
    gpu = GpuSettings(fit_target_mib=(_host_mib(),), fit_ctx=512)
    status, _, context = _fit(alpha, gpu, 1024)
    assert (status, context.n_ctx) == (FitStatus.FAILURE, 1024)


def test_a_cpu_machine_loads_as_before(alpha: str) -> None:
    # No GPU here: nothing to fit to, and the measuring loads would only cost time.
    model, context = _params(0)
    buffers = DeviceParams(GpuSettings(fit_target_mib=(_host_mib(),)))
    assert fit_params(alpha, model, context, buffers) == FitStatus.OFF
    assert context.n_ctx == 0


def test_a_draft_model_is_fitted_with_the_model(alpha: str) -> None:
    # As llama-server with a draft model: the fit measures both, the draft's context following
    # the model's (common/fit.cpp writes it into the draft's parameters).
    draft_model, draft_context = _params(0, unified=False)
    extra = ExtraModel(alpha.encode(), ctypes.pointer(draft_model), ctypes.pointer(draft_context))
    gpu = GpuSettings(fit_target_mib=(_host_mib(),), fit_ctx=512)
    model, context = _params(0)
    buffers = DeviceParams(gpu)
    buffers.apply(model, context)
    status = common_fit(alpha, model, context, buffers, extra)
    assert (status, context.n_ctx, draft_context.n_ctx) == (FitStatus.FAILURE, 512, 512)
