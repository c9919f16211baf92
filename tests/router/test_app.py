"""Startup checks of the router app: what must load at startup has to fit the limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.app import create_app
from router.catalogue.catalogue import CatalogueError
from router.settings import ServeSettings


def _startup(models_dir: Path, **limits: int) -> ServeSettings:
    files = [models_dir / "alpha.gguf", models_dir / "beta.gguf"]  # -m: load at startup
    return ServeSettings(model_files=files, **limits)  # type: ignore[arg-type]


def test_more_startup_models_than_models_max_is_an_error(models_dir: Path) -> None:
    with pytest.raises(CatalogueError, match="2 models are to load on startup but --models-max"):
        create_app(_startup(models_dir, models_max=1))
    create_app(_startup(models_dir, models_max=2))


def test_startup_models_over_the_memory_budget_are_an_error(models_dir: Path) -> None:
    # Each tiny model is expected to hold about 97 MiB: a worker process, its file, its context.
    message = r"2 models are to load on startup, expected to hold 19\d MiB, but --models-memory-max"
    with pytest.raises(CatalogueError, match=message):
        create_app(_startup(models_dir, models_memory_max=150 << 20))
    create_app(_startup(models_dir, models_memory_max=300 << 20))
    create_app(ServeSettings(model_files=[models_dir / "alpha.gguf"], models_memory_max=1 << 20))
