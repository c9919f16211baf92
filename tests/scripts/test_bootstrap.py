"""scripts/bootstrap.py's choice of GPU back-end. There is no CUDA toolkit here: the programs on
``PATH`` (``which``) and the environment are given, and a CUDA_HOME is a real folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from scripts.bootstrap import gpu_backend, gpu_cmake_args


def _which(*found: str) -> Callable[[str], str | None]:
    return lambda name: f"/usr/bin/{name}" if name in found else None


@pytest.fixture
def cuda_home(tmp_path: Path) -> Path:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "nvcc").write_text("")
    return tmp_path


def test_without_a_toolkit_the_cpu_build_is_as_before() -> None:
    assert gpu_backend({}, _which()) == ("cpu", "no CUDA toolkit (nvcc, CUDA_HOME)")
    assert gpu_cmake_args("cpu", {}, _which("nvidia-smi")) == []


def test_nvcc_on_the_path_builds_cuda_for_this_machines_gpus() -> None:
    assert gpu_backend({}, _which("nvcc", "nvidia-smi")) == ("cuda", "nvcc on PATH")
    assert gpu_cmake_args("cuda", {}, _which("nvcc", "nvidia-smi")) == [
        "-DGGML_CUDA=ON",
        "-DCMAKE_CUDA_ARCHITECTURES=native",
    ]
    # No GPU to look at (a container build): llama.cpp's own list of architectures.
    assert gpu_cmake_args("cuda", {}, _which("nvcc")) == ["-DGGML_CUDA=ON"]


def test_a_toolkit_without_the_driver_builds_for_the_cpu() -> None:
    # As on a build machine without a GPU: a CUDA build links libcuda and would not load.
    assert gpu_backend({}, _which("nvcc")) == (
        "cpu",
        "a CUDA toolkit (nvcc on PATH) but no NVIDIA driver (nvidia-smi)",
    )


def test_cuda_home_is_a_toolkit_off_the_path(cuda_home: Path) -> None:
    env = {"CUDA_HOME": str(cuda_home)}
    assert gpu_backend(env, _which("nvidia-smi")) == ("cuda", "CUDA_HOME")
    assert gpu_cmake_args("cuda", env, _which()) == [
        "-DGGML_CUDA=ON",
        f"-DCMAKE_CUDA_COMPILER={cuda_home / 'bin' / 'nvcc'}",
    ]


def test_a_cuda_home_without_nvcc_is_no_toolkit(tmp_path: Path) -> None:
    assert gpu_backend({"CUDA_HOME": str(tmp_path)}, _which("nvidia-smi"))[0] == "cpu"


@pytest.mark.parametrize(
    ("forced", "backend", "args"),
    [
        ("cpu", "cpu", []),
        ("CUDA", "cuda", ["-DGGML_CUDA=ON"]),
        ("vulkan", "vulkan", ["-DGGML_VULKAN=ON"]),
    ],
)
def test_corral_gpu_forces_a_choice(forced: str, backend: str, args: list[str]) -> None:
    # Even against a toolkit and driver: CORRAL_GPU=cpu keeps a CUDA machine on the CPU.
    assert gpu_backend({"CORRAL_GPU": forced}, _which("nvcc", "nvidia-smi")) == (
        backend,
        "CORRAL_GPU",
    )
    assert gpu_cmake_args(backend, {}, _which()) == args


def test_an_unknown_choice_stops_the_setup() -> None:
    with pytest.raises(SystemExit, match="CORRAL_GPU=rocm: expected one of cuda, vulkan, cpu"):
        gpu_backend({"CORRAL_GPU": "rocm"}, _which())
