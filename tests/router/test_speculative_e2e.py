"""Speculative decoding through a running router: drafts from files and the hub cache, and a
draft the target cannot use reported as the model's failed load."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.router_process import RouterProcess, running_router

COMPLETION = {"prompt": "once upon a time", "n_predict": 16, "temperature": 0, "ignore_eos": True}


def test_a_single_model_with_a_draft_reports_its_guesses(models_dir: Path) -> None:
    draft = models_dir / "beta.gguf"
    args = ["-m", str(models_dir / "alpha.gguf"), "-md", str(draft), "--spec-draft-n-max", "4"]
    with running_router([*args, "-c", "256"]) as router:
        answer = router.client.post("/completion", json=COMPLETION)
        assert answer.status_code == 200
        timings = answer.json()["timings"]
        assert timings["draft_n"] >= timings["draft_n_accepted"] >= 0
        assert timings["draft_n"] > 0
        status = router.models()["alpha"]["status"]
        assert "--model-draft" in status["args"]
        assert str(draft) in status["args"]


def test_a_draft_with_another_vocabulary_fails_the_load_with_the_reason(
    models_dir: Path, tmp_path: Path
) -> None:
    write_tiny_gguf(tmp_path / "other.gguf", words="alpha beta gamma")
    preset = tmp_path / "models.ini"
    preset.write_text(f"[mixed]\nmodel = {models_dir / 'alpha.gguf'}\nmodel-draft = other.gguf\n")
    with running_router(["--models-preset", str(preset), "-c", "256"]) as router:
        response = router.client.post("/completion", json={"model": "mixed", **COMPLETION})
        assert response.status_code == 500
        reason = "draft model other.gguf cannot draft for this model: vocabulary sizes differ"
        assert reason in response.json()["error"]["message"]
        status = router.models()["mixed"]["status"]
        assert status["failed"] is True
        assert reason in status["error"]


def _hub(root: Path) -> Path:
    for repo, name, seed in (("tiny", "tiny-Q8_0.gguf", 0), ("tiny-draft", "tiny-Q4_0.gguf", 1)):
        snapshot = root / "hub" / f"models--acme--{repo}-GGUF" / "snapshots" / ("a" * 40)
        snapshot.mkdir(parents=True)
        write_tiny_gguf(snapshot / name, name=repo, seed=seed)
        (snapshot.parent.parent / "refs").mkdir()
        (snapshot.parent.parent / "refs" / "main").write_text("a" * 40)
    return root / "hub"


def test_hf_draft_from_the_hub_cache(tmp_path: Path) -> None:
    hub = _hub(tmp_path)
    args = ["-hf", "acme/tiny-GGUF", "-hfd", "acme/tiny-draft-GGUF", "-c", "256", "--offline"]
    with running_router(args, env={"HF_HUB_CACHE": str(hub)}) as router:
        answer = router.client.post("/completion", json=COMPLETION)
        assert answer.status_code == 200
        assert answer.json()["timings"]["draft_n"] > 0


def test_a_draft_missing_from_the_cache_stops_startup(tmp_path: Path) -> None:
    hub = _hub(tmp_path)
    args = ["-hf", "acme/tiny-GGUF", "-hfd", "acme/gone-GGUF", "--offline"]
    missing = r"key 'spec-draft-hf': 'acme/gone-GGUF' is not in the hub cache"
    with pytest.raises(RuntimeError, match=missing):
        RouterProcess(args, env={"HF_HUB_CACHE": str(hub)})
