"""``--threads-batch`` gives the context its prompt threads, as llama-server's ``-tb``."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.engine.model import LoadedModel
from worker.host.llama_bindings import llama_cpp
from worker.settings.parse import parse_worker_args


@pytest.mark.parametrize(("flags", "batch_threads"), [((), 1), (("-tb", "2"), 2)])
def test_the_prompt_threads_are_threads_batch_else_threads(
    models_dir: Path, flags: tuple[str, ...], batch_threads: int
) -> None:
    argv = ["-m", str(models_dir / "alpha.gguf"), "-c", "256", "-t", "1", "--no-kv-persist"]
    loaded = LoadedModel(parse_worker_args([*argv, *flags]), lambda value: None)
    try:
        assert llama_cpp.llama_n_threads(loaded.ctx) == 1
        assert llama_cpp.llama_n_threads_batch(loaded.ctx) == batch_threads
    finally:
        loaded.close()
