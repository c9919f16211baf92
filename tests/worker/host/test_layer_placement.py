"""Where a real model's layers and bytes went, read from llama.cpp's own load log."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.engine.model import LoadedModel
from worker.settings import parse_worker_args

# tests/support/tiny_gguf.py: two blocks (llama.cpp counts the output layer too), two KV heads
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
