"""The GPU options as llama.cpp's parameters, as llama-server sets them (common/arg.cpp)."""

from __future__ import annotations

import ctypes
import re
from typing import Any

import pytest

from worker.devices.params import DeviceParams
from worker.devices.settings import GpuSettings
from worker.host import ggml_backends
from worker.host.llama_bindings import llama_cpp


def _applied(gpu: GpuSettings) -> tuple[DeviceParams, Any, Any]:
    model = llama_cpp.llama_model_default_params()
    context = llama_cpp.llama_context_default_params()
    params = DeviceParams(gpu)
    params.apply(model, context)
    return params, model, context


def _overrides(params: DeviceParams) -> list[tuple[str, int]]:
    found = []
    for entry in params.overrides:
        if entry.pattern is None:
            break
        found.append((entry.pattern.decode(), entry.buft))
    return found


def test_defaults_are_llama_cpps() -> None:
    params, model, context = _applied(GpuSettings())
    defaults = llama_cpp.llama_model_default_params()
    assert model.devices is None  # every device
    assert (model.split_mode, model.main_gpu) == (defaults.split_mode, defaults.main_gpu)
    assert not model.tensor_split
    assert _overrides(params) == []
    # The writable buffers llama.cpp's fit asks for.
    assert len(params.tensor_split) == llama_cpp.llama_max_devices()
    assert len(params.overrides) == llama_cpp.llama_max_tensor_buft_overrides()
    assert (context.offload_kqv, context.op_offload) == (True, True)


def test_flags_reach_the_parameters() -> None:
    gpu = GpuSettings(
        split_mode="row", main_gpu=1, tensor_split=(3.0, 1.0), kv_offload=False, op_offload=False
    )
    _, model, context = _applied(gpu)
    assert (model.split_mode, model.main_gpu) == (2, 1)
    assert (model.tensor_split[0], model.tensor_split[1], model.tensor_split[2]) == (3.0, 1.0, 0.0)
    assert (context.offload_kqv, context.op_offload) == (False, False)


def test_experts_and_dense_layers_kept_on_the_cpu() -> None:
    cpu = ggml_backends.cpu_buffer_type()
    params, _, _ = _applied(GpuSettings(cpu_moe=True, n_cpu_moe=2, n_cpu_ffn=1))
    exps = r"\.ffn_(up|down|gate|gate_up)_(ch|)exps"
    assert _overrides(params) == [
        (exps, cpu),
        (rf"blk\.0{exps}", cpu),
        (rf"blk\.1{exps}", cpu),
        (r"blk\.0\.ffn_(up|down|gate)\.", cpu),
    ]


def test_override_tensor_names_a_devices_buffer_type() -> None:
    params, _, _ = _applied(GpuSettings(override_tensor=("token_embd=CPU",)))
    assert _overrides(params) == [("token_embd", ggml_backends.cpu_buffer_type())]


@pytest.mark.parametrize(
    ("gpu", "message"),
    [
        (GpuSettings(override_tensor=("exps=VRAM",)), "unknown buffer type 'VRAM' (known: CPU)"),
        (GpuSettings(override_tensor=("exps",)), "expected PATTERN=TYPE"),
        (GpuSettings(devices=("CUDA0",)), "invalid device: CUDA0"),
        (GpuSettings(devices=("CPU",)), "invalid device: CPU"),  # as llama-server
    ],
)
def test_bad_devices_and_types_are_refused(gpu: GpuSettings, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        DeviceParams(gpu)


def test_device_none_offloads_nothing() -> None:
    params, model, _ = _applied(GpuSettings(devices=("none",)))
    assert params.devices is not None
    assert list(params.devices) == [None]
    assert model.devices == ctypes.addressof(params.devices)
