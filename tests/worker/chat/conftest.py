"""A worker for the module's ``model`` fixture, and the official ``openai`` client to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from tests.support.worker_process import worker


@pytest.fixture(scope="module")
def worker_args() -> tuple[str, ...]:
    """The worker's extra flags; a module that tests the generic tool mode turns it on."""
    return ()


@pytest.fixture(scope="module")
def server(model: Path, worker_args: tuple[str, ...]) -> Iterator[str]:
    with worker(model, "--ctx-size", "1024", *worker_args) as child:
        yield child.url


@pytest.fixture(scope="module")
def client(server: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{server}/v1", api_key="x", max_retries=0) as client:
        yield client
