"""Slot actions through the router, and slot caches that survive an eviction, end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.router_process import RouterProcess, running_router

FIRST = "once upon a time there was a little model that said hello to the world and " * 3
SECOND = FIRST + " then the story goes on with people who find water"


def _complete(router: RouterProcess, model: str, prompt: str) -> dict[str, Any]:
    body = {"model": model, "prompt": prompt, "n_predict": 8, "temperature": 0}
    answer = router.client.post("/completion", json={**body, "ignore_eos": True})
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def test_slot_actions_go_to_the_model_named_in_the_query_or_the_body(
    models_dir: Path, tmp_path: Path
) -> None:
    args = ["--models-dir", str(models_dir), "--ctx-size", "512", "--slot-save-path", str(tmp_path)]
    with running_router(args) as router:
        _complete(router, "alpha", FIRST)
        by_query = router.client.post(
            "/slots/0?action=save&model=alpha", json={"filename": "alpha.bin"}
        )
        assert by_query.status_code == 200, by_query.text
        assert by_query.json()["n_saved"] > 0
        by_body = router.client.post(
            "/slots/0?action=restore", json={"filename": "alpha.bin", "model": "alpha"}
        )
        assert by_body.json()["n_restored"] == by_query.json()["n_saved"]
        erased = router.client.post("/slots/0?action=erase&model=alpha")
        assert erased.json() == {"id_slot": 0, "n_erased": by_query.json()["n_saved"]}
        unnamed = router.client.post("/slots/0?action=erase")
        assert unnamed.status_code == 400
        assert unnamed.json()["error"]["message"] == "model name is missing from the request"
    assert (tmp_path / "alpha.bin").is_file()


def test_single_model_mode_needs_no_model_name(models_dir: Path, tmp_path: Path) -> None:
    args = ["-m", str(models_dir / "alpha.gguf"), "--ctx-size", "512"]
    with running_router([*args, "--slot-save-path", str(tmp_path)]) as router:
        _complete(router, "whatever", FIRST)
        saved = router.client.post("/slots/0?action=save", json={"filename": "one.bin"})
        assert saved.status_code == 200, saved.text
        assert router.client.post("/slots/0?action=erase").status_code == 200


@pytest.fixture
def reference(models_dir: Path) -> dict[str, Any]:
    """The second request's answer when the model stays loaded between the two requests."""
    args = ["--models-dir", str(models_dir), "--ctx-size", "512", "--models-max", "1"]
    with running_router(args) as router:
        _complete(router, "alpha", FIRST)
        return _complete(router, "alpha", SECOND)


def test_a_conversation_survives_its_model_being_evicted(
    models_dir: Path, tmp_path: Path, reference: dict[str, Any]
) -> None:
    args = ["--models-dir", str(models_dir), "--ctx-size", "512", "--models-max", "1"]
    with running_router([*args, "--kv-cache-dir", str(tmp_path)]) as router:
        _complete(router, "alpha", FIRST)
        _complete(router, "beta", FIRST)  # alpha is evicted to make room
        assert router.models()["alpha"]["status"]["value"] == "unloaded"
        resumed = _complete(router, "alpha", SECOND)
    assert resumed["timings"]["cache_n"] == reference["timings"]["cache_n"] > 0
    assert resumed["content"] == reference["content"]
