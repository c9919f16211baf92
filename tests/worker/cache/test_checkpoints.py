"""Context checkpoints and the window check of a sliding-window model (worker/cache/checkpoints.py).

A real worker runs the tiny gemma2 model of tests/support/files/tiny_swa_gguf.py with llama-server's
default cache (no ``--swa-full``), a 64-token ubatch so that its window layers keep 256 cells,
and one slot. A prompt whose first 400 tokens match a 700-token one read before it cannot resume
from the cut cache: the window before position 400 was overwritten. What it answers must equal
what the same prompt answers on a clean slot (``cache_prompt: false``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from tests.support.files.tiny_swa_gguf import write_tiny_swa_gguf
from tests.support.worker_process import WorkerProcess, worker

# No copies in host memory (--cache-ram 0) unless a test asks: they would serve some prompts.
_FLAGS = ("--parallel", "1", "--ctx-size", "2048", "-b", "64", "-ub", "64", "--cache-ram", "0")
_FIRST_WORD = 262  # past the special and byte tokens


@pytest.fixture(scope="module")
def swa_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_swa_gguf(tmp_path_factory.mktemp("swa") / "tiny-swa.gguf")


@pytest.fixture
def swa_worker(swa_model: Path, request: pytest.FixtureRequest) -> Iterator[WorkerProcess]:
    with worker(swa_model, *_FLAGS, *getattr(request, "param", ())) as child:
        yield child


def _tokens(seed: int, count: int) -> list[int]:
    return [int(t) for t in np.random.default_rng(seed).integers(_FIRST_WORD, 500, count)]


def _complete(url: str, prompt: list[int], cache_prompt: bool = True, n: int = 1) -> Any:
    body = {
        "prompt": prompt,
        "n_predict": n,
        "n_probs": 5,
        "temperature": 0,
        "cache_prompt": cache_prompt,
    }
    answer = httpx.post(f"{url}/completion", json=body, timeout=120)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _top(answer: Any) -> dict[int, float]:
    top = answer["completion_probabilities"][0]["top_logprobs"]
    return {c["id"]: float(np.exp(c["logprob"])) for c in top}


def _same_distribution(got: dict[int, float], want: dict[int, float]) -> bool:
    return got.keys() == want.keys() and all(abs(got[t] - want[t]) < 1e-3 for t in want)


def _after(url: str, first: list[int], second: list[int], n: int = 1) -> tuple[int, bool]:
    """``second`` read after ``first`` (and ``n`` tokens of answer) in the slot: how many of its
    tokens came from the cache, and whether its answer is the one a clean slot gives."""
    _complete(url, first, n=n)
    again = _complete(url, second)
    fresh = _complete(url, second, cache_prompt=False)
    return again["timings"]["cache_n"], _same_distribution(_top(again), _top(fresh))


def test_a_prompt_cut_before_the_window_is_read_again(swa_worker: WorkerProcess) -> None:
    first = _tokens(1, 700)
    # No checkpoint that early: read from the start.
    assert _after(swa_worker.url, first, first[:400] + _tokens(2, 5)) == (0, True)


def test_a_prompt_cut_inside_the_window_resumes(swa_worker: WorkerProcess) -> None:
    first = _tokens(1, 700)
    assert _after(swa_worker.url, first, first[:690] + _tokens(2, 5)) == (690, True)


def test_the_next_turn_resumes_from_a_checkpoint(swa_worker: WorkerProcess) -> None:
    """A chat's next turn shares the last prompt but not the answer after it (a template that
    drops the reasoning, say): the window of the prompt's end is gone, a checkpoint has it."""
    first = _tokens(1, 700)
    # The answer's 300 tokens push the prompt's end out of the window. The checkpoint 4 tokens
    # before the end serves; as llama-server, its last token is read again.
    assert _after(swa_worker.url, first, first + _tokens(3, 5), n=300) == (700 - 4 - 1, True)


@pytest.mark.parametrize("swa_worker", [("--ctx-checkpoints", "0")], indirect=True)
def test_without_checkpoints_the_next_turn_is_read_again(swa_worker: WorkerProcess) -> None:
    first = _tokens(1, 700)
    _complete(swa_worker.url, first, n=300)
    again = _complete(swa_worker.url, first + _tokens(3, 5))
    assert again["timings"]["cache_n"] == 0


@pytest.mark.parametrize("swa_worker", [("--swa-full",)], indirect=True)
def test_with_swa_full_any_prefix_resumes(swa_worker: WorkerProcess) -> None:
    first = _tokens(1, 700)
    assert _after(swa_worker.url, first, first[:400] + _tokens(2, 5)) == (400, True)


@pytest.mark.parametrize("swa_worker", [("--cache-ram", "64")], indirect=True)
def test_a_copy_in_memory_resumes_through_its_checkpoints(swa_worker: WorkerProcess) -> None:
    """A copy set aside holds only the window; the checkpoints taken with it go along."""
    first = _tokens(1, 700)
    second = first[:690] + _tokens(2, 5)
    fresh = _complete(swa_worker.url, second, cache_prompt=False)
    _complete(swa_worker.url, first)  # the slot's cache of ``second`` goes to a copy first
    again = _complete(swa_worker.url, second)  # the copy comes back
    assert again["timings"]["cache_n"] == 690  # its checkpoint 5 tokens before its end
    assert _same_distribution(_top(again), _top(fresh))
