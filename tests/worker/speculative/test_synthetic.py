"""Synthetic acceptance, llama-server's benchmarking aid: its rates, and a worker that uses them.

The cases of llama-server's test_speculative.py that use ``--spec-synth-rates``, against the
worker with a tiny self-draft.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.worker_process import worker
from worker.speculative.synthetic import synthetic_chances

PROMPT = {"prompt": "once upon a time the little model", "seed": 4242}


def test_rates_become_chances_given_the_guesses_before() -> None:
    assert synthetic_chances(None, [0.8, 0.4, 0.1], 3) == pytest.approx((0.8, 0.5, 0.25))
    assert synthetic_chances(None, [1.0, 0.0], 2) == (1.0, 0.0)
    assert synthetic_chances(None, [], 3) == ()


def test_a_mean_length_sets_geometric_rates() -> None:
    assert synthetic_chances(4.0, [], 3) == (1.0, 1.0, 1.0)  # every guess: 3 + the sampled one
    assert synthetic_chances(1.0, [], 3) == (0.0, 0.0, 0.0)
    p = synthetic_chances(2.0, [], 3)[0]
    assert p + p**2 + p**3 == pytest.approx(1.0)
    assert synthetic_chances(2.0, [], 3) == pytest.approx((p, p, p))


@pytest.mark.parametrize(
    ("length", "rates", "message"),
    [
        (2.0, [0.5, 0.5], "cannot be used together"),
        (None, [0.5], "must have 2 values, got 1"),
        (None, [0.5, 0.6], "must not increase"),
        (None, [1.5, 0.5], "within [0, 1]"),
        (3.5, [], "--spec-synth-len must be within [1, 3]"),
    ],
)
def test_impossible_settings_are_refused(
    length: float | None, rates: list[float], message: str
) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        synthetic_chances(length, rates, 2)


def _complete(url: str, **body: Any) -> dict[str, Any]:
    response = httpx.post(f"{url}/completion", json={**PROMPT, **body}, timeout=120)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def _synthetic_worker(models_dir: Path, rates: list[float]) -> Any:
    target = models_dir / "alpha.gguf"
    joined = ",".join(str(rate) for rate in rates)
    args = ("-md", str(target), "--spec-draft-n-max", "8", "--spec-synth-rates", joined)
    return worker(target, *args)


def test_rejecting_every_guess_gives_plain_tokens(models_dir: Path) -> None:
    request = {"temperature": 0.2, "top_k": 5, "n_predict": 16}
    with worker(models_dir / "alpha.gguf") as child:
        plain = _complete(child.url, **request)["content"]
    with _synthetic_worker(models_dir, [0.0] * 8) as child:
        answer = _complete(child.url, **request)
    assert answer["content"] == plain
    assert answer["timings"]["draft_n"] > 0
    assert answer["timings"]["draft_n_accepted"] == 0


def test_synthetic_acceptance_is_deterministic_for_a_seed(models_dir: Path) -> None:
    with _synthetic_worker(models_dir, [0.75 ** (i + 1) for i in range(8)]) as child:
        first, second = (
            _complete(child.url, temperature=0.2, top_k=5, n_predict=32)["timings"]
            for _ in range(2)
        )
    assert first["draft_n"] > 0
    assert (first["draft_n"], first["draft_n_accepted"]) == (
        second["draft_n"],
        second["draft_n_accepted"],
    )
    assert 0 < first["draft_n_accepted"] < first["draft_n"]


def test_keeping_every_guess_ignores_the_model(models_dir: Path) -> None:
    with _synthetic_worker(models_dir, [1.0] * 8) as child:
        answer = _complete(child.url, temperature=0.0, n_predict=32)
        assert answer["timings"]["draft_n_accepted"] == answer["timings"]["draft_n"] > 0
        grammar = 'root ::= "a"{5,5}'
        assert _complete(child.url, temperature=0.0, n_predict=6, grammar=grammar)["content"]
        limited = _complete(child.url, temperature=0.0, n_predict=64, ignore_eos=True)
    assert limited["tokens_predicted"] == 64
    assert limited["stop_type"] == "limit"
