"""Control vectors (worker/engine/params/control_vectors.py) on a real worker: a direction added to
the hidden state changes what the model predicts, at scale 0 it changes nothing, and a file that is
no control vector fails the load naming it, as llama-server fails its start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import gguf
import httpx
import numpy as np
import pytest

from corral.children.protocol import EXIT_FAILED
from tests.support.files.tiny_gguf import TEXT_EMBEDDING_LENGTH
from tests.support.worker_process import worker
from worker.engine.params.control_vectors import load_control_vectors


def _write_vector(path: Path, layers: dict[str, np.ndarray]) -> Path:
    writer = gguf.GGUFWriter(path, "controlvector")
    for name, data in layers.items():
        writer.add_tensor(name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture
def vector(tmp_path: Path) -> Path:
    rng = np.random.default_rng(7)
    layers = {
        f"direction.{n}": (rng.standard_normal(TEXT_EMBEDDING_LENGTH) * 20).astype(np.float32)
        for n in (1, 2)
    }
    return _write_vector(tmp_path / "vector.gguf", layers)


def _top(url: str) -> dict[int, float]:
    body = {"prompt": "once upon a time", "n_predict": 1, "n_probs": 5, "temperature": 0}
    answer: Any = httpx.post(f"{url}/completion", json=body, timeout=60).json()
    top = answer["completion_probabilities"][0]["top_logprobs"]
    return {c["id"]: round(c["logprob"], 4) for c in top}


def test_a_control_vector_changes_the_prediction_and_scale_0_does_not(
    models_dir: Path, vector: Path
) -> None:
    model = models_dir / "alpha.gguf"
    with worker(model) as child:
        plain = _top(child.url)
    with worker(model, "--control-vector", str(vector)) as child:
        steered = _top(child.url)
    with worker(model, "--control-vector-scaled", f"{vector}:0") as child:
        unscaled = _top(child.url)
    with worker(
        model, "--control-vector", str(vector), "--control-vector-layer-range", "2", "2"
    ) as child:
        out_of_range = _top(child.url)
    assert steered != plain
    assert unscaled == plain
    # llama.cpp adds direction.N after layer N (from 0): this model's are 0 and 1, so a range
    # of layer 2 alone applies nothing.
    assert out_of_range == plain


def test_files_add_up_each_times_its_scale(tmp_path: Path) -> None:
    one = np.ones(4, dtype=np.float32)
    a = _write_vector(tmp_path / "a.gguf", {"direction.1": one, "direction.3": one * 2})
    b = _write_vector(tmp_path / "b.gguf", {"direction.1": one})
    summed = load_control_vectors([(str(a), 1.0), (str(b), 0.5)])
    assert summed.tolist() == [[1.5] * 4, [0.0] * 4, [2.0] * 4]  # layer 2: none given


def test_a_file_that_is_no_control_vector_fails_the_load_naming_it(
    models_dir: Path, tmp_path: Path
) -> None:
    bad = _write_vector(tmp_path / "bad.gguf", {"weights.1": np.ones(4, dtype=np.float32)})
    command = [sys.executable, "-m", "worker", "--model", str(models_dir / "alpha.gguf")]
    done = subprocess.run(
        [*command, "--control-vector", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == EXIT_FAILED
    assert f"control vector {bad}: unparsable layer in 'weights.1'" in done.stderr
