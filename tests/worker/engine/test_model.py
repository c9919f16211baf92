"""A load that fails part way releases what it had acquired (worker.engine.model), whichever
step fails: here a LoRA adapter file that is missing, read once the weights and their context
are made. The weights are seen through the process's memory map (llama.cpp maps the model
file while it holds the model); the contexts through the calls that make and free them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from worker.engine.model import LoadedModel
from worker.engine.params.llama_params import new_context
from worker.host.llama_bindings import llama_cpp
from worker.settings.parse import parse_worker_args


def _mapped(path: Path) -> bool:
    return str(path) in Path("/proc/self/maps").read_text()


@pytest.fixture
def contexts(monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[int]]:
    """The llama contexts made and freed while a test runs, by address."""
    made: list[int] = []
    freed: list[int] = []
    free = llama_cpp.llama_free

    def making(*args: Any) -> Any:
        ctx = new_context(*args)
        made.append(ctx)
        return ctx

    def freeing(ctx: Any) -> None:
        freed.append(ctx)
        free(ctx)

    monkeypatch.setattr("worker.engine.model.new_context", making)
    monkeypatch.setattr(llama_cpp, "llama_free", freeing)
    return made, freed


def test_a_late_step_that_fails_releases_the_weights_and_the_context(
    models_dir: Path, tmp_path: Path, contexts: tuple[list[int], list[int]]
) -> None:
    made, freed = contexts
    weights = Path(shutil.copy(models_dir / "alpha.gguf", tmp_path / "weights.gguf"))
    argv = ["-m", str(weights), "-c", "256", "-t", "1", "--no-kv-persist"]
    loaded = LoadedModel(parse_worker_args(argv), lambda value: None)
    assert _mapped(weights)  # what a loaded model holds is seen here
    loaded.close()
    assert not _mapped(weights)
    assert freed == made

    missing = tmp_path / "missing-adapter.gguf"
    with pytest.raises(ValueError, match="failed to load LoRA adapter"):
        LoadedModel(parse_worker_args([*argv, "--lora", str(missing)]), lambda value: None)
    assert not _mapped(weights)
    assert len(made) == 2
    assert freed == made
