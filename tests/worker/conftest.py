"""Fixtures shared by the worker's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from worker.engine.llama_model import LlamaModel
from worker.host.llama_bindings import llama_cpp


@pytest.fixture(scope="module")
def vocab(models_dir: Path) -> Iterator[Any]:
    """The tiny ``alpha`` model's vocabulary, for grammars checked against real tokens."""
    llama_cpp.llama_backend_init()
    model = LlamaModel(str(models_dir / "alpha.gguf"), llama_cpp.llama_model_default_params())
    yield model.vocab
    model.close()
