"""``--cache-reuse`` (worker/cache/chunk_reuse.py): a prompt with part of the last one cut out of
its middle gets what follows the cut from the slot's cache, shifted into place, as llama-server
does. A real worker, one slot, no copies in host memory (``--cache-ram 0``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from tests.support.worker_process import worker

_FLAGS = ("--parallel", "1", "--ctx-size", "2048", "--cache-ram", "0")


def _tokens(seed: int, count: int) -> list[int]:
    return [int(t) for t in np.random.default_rng(seed).integers(262, 500, count)]


def _cached(url: str, prompt: list[int], **extra: Any) -> int:
    body = {"prompt": prompt, "n_predict": 4, "temperature": 0, **extra}
    answer = httpx.post(f"{url}/completion", json=body, timeout=120)
    assert answer.status_code == 200, answer.text
    assert answer.json()["content"]
    cached: int = answer.json()["timings"]["cache_n"]
    return cached


def test_the_chunk_after_a_cut_is_shifted_into_place(models_dir: Path) -> None:
    first = _tokens(1, 300)
    edited = first[:100] + first[120:] + _tokens(3, 10)
    with worker(models_dir / "alpha.gguf", *_FLAGS, "--cache-reuse", "16") as child:
        _cached(child.url, first)
        assert _cached(child.url, edited) == 100 + 180  # the prefix, then the shifted chunk
        # The cache now holds ``edited`` in order: all of it but the last token is reused.
        assert _cached(child.url, edited) == len(edited) - 1


def test_without_cache_reuse_only_the_prefix_is_reused(models_dir: Path) -> None:
    first = _tokens(1, 300)
    edited = first[:100] + first[120:] + _tokens(3, 10)
    with worker(models_dir / "alpha.gguf", *_FLAGS) as child:
        _cached(child.url, first)
        assert _cached(child.url, edited) == 100


@pytest.mark.parametrize(("flag", "field", "expected"), [("0", 16, 280), ("16", 0, 100)])
def test_the_request_field_overrides_the_flag(
    models_dir: Path, flag: str, field: int, expected: int
) -> None:
    first = _tokens(1, 300)
    edited = first[:100] + first[120:] + _tokens(3, 10)
    with worker(models_dir / "alpha.gguf", *_FLAGS, "--cache-reuse", flag) as child:
        _cached(child.url, first)
        assert _cached(child.url, edited, n_cache_reuse=field) == expected


def test_a_negative_n_cache_reuse_is_a_400(models_dir: Path) -> None:
    with worker(models_dir / "alpha.gguf", *_FLAGS) as child:
        body = {"prompt": "hello", "n_predict": 1, "n_cache_reuse": -1}
        answer = httpx.post(f"{child.url}/completion", json=body, timeout=60)
        assert answer.status_code == 400
        assert "n_cache_reuse" in answer.json()["error"]["message"]
