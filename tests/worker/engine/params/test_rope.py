"""RoPE and YaRN scaling from llama-server's flags reach the context: a real worker's answers
change with them, and ``--rope-scale N`` is ``--rope-freq-scale 1/N`` as in llama-server."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.worker_process import worker
from worker.settings.groups import RopeSettings
from worker.settings.parse import parse_worker_args

PROMPT = "Once upon a time, in a land far away, there lived a"


def _answer(model: Path, *flags: str) -> list[float]:
    with worker(model, *flags) as child:
        body = {"prompt": PROMPT, "n_predict": 1, "n_probs": 5, "temperature": 0}
        reply = httpx.post(f"{child.url}/completion", json=body, timeout=120).raise_for_status()
        # The first token's top probabilities: a change of positions' rotation shows in them.
        top = reply.json()["completion_probabilities"][0]["top_logprobs"]
        return [round(entry["logprob"], 4) for entry in top]


def test_rope_scaling_changes_the_answer_and_its_two_spellings_agree(models_dir: Path) -> None:
    model = models_dir / "alpha.gguf"
    plain = _answer(model)
    scaled = _answer(model, "--rope-scale", "4")
    assert scaled != plain
    assert _answer(model, "--rope-freq-scale", "0.25") == scaled


def test_the_flags_become_rope_settings(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["-m", "m.gguf", "--rope-scaling", "yarn", "--rope-scale", "2", "--yarn-orig-ctx", "8"]
    argv += ["--yarn-ext-factor", "0.5", "--yarn-beta-fast", "16", "--check-tensors"]
    settings = parse_worker_args(argv)
    assert settings.rope == RopeSettings(
        scaling="yarn", freq_scale=0.5, yarn_orig_ctx=8, yarn_ext_factor=0.5, yarn_beta_fast=16
    )
    assert settings.check_tensors
    with pytest.raises(SystemExit):
        parse_worker_args(["-m", "m.gguf", "--rope-scale", "2", "--rope-freq-scale", "0.5"])
    assert "not both" in capsys.readouterr().err
