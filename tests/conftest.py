"""Fixtures shared by the whole suite: tiny random-weight models and running routers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fakes.fake_hub import FakeHub
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.router_process import RouterProcess, running_router


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two tiny models: ``alpha`` with a chat template, ``beta`` without one."""
    directory = tmp_path_factory.mktemp("models")
    write_tiny_gguf(directory / "alpha.gguf", name="alpha")
    write_tiny_gguf(directory / "beta.gguf", name="beta", chat_template=None, seed=1)
    return directory


def _serve_models(models_dir: Path) -> Iterator[RouterProcess]:
    with running_router(["--models-dir", str(models_dir), "--ctx-size", "512"]) as process:
        yield process


@pytest.fixture
def router(models_dir: Path) -> Iterator[RouterProcess]:
    """A fresh router per test, so one test's crashed or loaded workers never leak into another."""
    yield from _serve_models(models_dir)


@pytest.fixture(scope="module")
def shared_router(models_dir: Path) -> Iterator[RouterProcess]:
    """One router for a module's tests that only read: each router start costs the suite a
    process, so a test that needs no fresh state (which models are loaded, what was logged)
    shares this one. Such a test must pass whichever of the module's tests ran before it."""
    yield from _serve_models(models_dir)


@pytest.fixture
def anyio_backend() -> str:
    """The event loop the router and workers run on: async tests run on it too."""
    return "asyncio"


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    """A local server speaking the Hugging Face hub's protocol (HF_ENDPOINT points at it)."""
    with FakeHub() as fake:
        yield fake


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """An empty hub cache directory for one test."""
    return tmp_path / "hub-cache"
