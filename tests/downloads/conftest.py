"""Fixtures for the download tests: a fake hub on loopback and tiny GGUF payloads."""

from __future__ import annotations

import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf


@pytest.fixture(scope="session")
def gguf_bytes(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """Three different tiny models (about 300 KB each), as the bytes a hub would serve."""
    directory = tmp_path_factory.mktemp("payloads")
    return [
        write_tiny_gguf(directory / f"m{seed}.gguf", seed=seed).read_bytes() for seed in range(3)
    ]
