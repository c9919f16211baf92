"""Where a real model's layers and bytes went, read from llama.cpp's own load log."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from corral.children.device_use import OutOfMemory
from corral.children.protocol import EXIT_FAILED
from worker.engine.model import LoadedModel
from worker.settings.parse import parse_worker_args

# tests/support/files/tiny_gguf.py: two blocks (llama.cpp counts the output layer too), two KV heads
# of 16 dimensions, a 2,048-token training context.
_LAYERS, _BLOCKS, _KV_WIDTH, _CTX = 3, 2, 2 * 16, 2048


@pytest.fixture(scope="module")
def loaded(models_dir: Path) -> LoadedModel:
    return LoadedModel(parse_worker_args(["-m", str(models_dir / "alpha.gguf")]), lambda _: None)


def test_a_cpu_model_has_its_bytes_on_the_cpu(loaded: LoadedModel) -> None:
    [cpu] = loaded.info()["meta"]["devices"]
    assert (cpu["name"], cpu["layers"]) == ("CPU", _LAYERS)
    # The KV cache to the byte: K and V, f16, one unified cache of the trained context.
    assert cpu["context_bytes"] == 2 * 2 * _CTX * _BLOCKS * _KV_WIDTH
    # The weights, as the log rounds them (0.01 MiB).
    assert abs(cpu["model_bytes"] - loaded.model.size()) < 0.01 * (1 << 20)
    assert cpu["compute_bytes"] > 0


def test_a_cpu_machine_reports_no_gpu_and_no_fit(loaded: LoadedModel) -> None:
    assert loaded.gpu_devices == []
    assert loaded.info()["meta"]["fit"] == {
        "status": "off",
        "n_gpu_layers": -1,
        "spilled_layers": 0,
    }


def _address_space_limit() -> None:
    # Room for Python and llama.cpp, not for a 4 GiB KV cache: its allocation fails at once,
    # whatever the machine's memory (no page is touched, the OOM killer is never involved).
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def test_a_load_out_of_memory_exits_naming_device_need_and_free(models_dir: Path) -> None:
    # 8 Mi tokens of f32 K and V: 2 blocks x 2 x 32 x 4 bytes = 512 bytes a token, 4 GiB.
    model = str(models_dir / "alpha.gguf")
    kv_cache = ["-c", str(8 << 20), "-ctk", "f32", "-ctv", "f32"]
    done = subprocess.run(
        [sys.executable, "-m", "worker", "-m", model, "--port", "0", *kv_cache],
        preexec_fn=_address_space_limit,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == EXIT_FAILED
    last_error = [line for line in done.stderr.splitlines() if '"error"' in line][-1]
    oom = OutOfMemory.parse(last_error)
    assert oom is not None, done.stderr[-2000:]
    assert oom.device == "CPU"
    assert oom.needed >= 4 << 30  # the KV cache, and the weights placed before it
    assert oom.free > 0
