"""LoRA adapters through the router: ``/lora-adapters`` routed by ``?model=`` (docs/api.md)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.files.tiny_lora import write_tiny_lora
from tests.support.router_process import running_router


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    directory = tmp_path_factory.mktemp("lora-router")
    base = write_tiny_gguf(directory / "base.gguf")
    return base, write_tiny_lora(directory / "adapter.gguf", base)


def _completion(client: httpx.Client, **extra: object) -> str:
    body = {"prompt": "once upon a time", "n_predict": 8, "temperature": 0, **extra}
    response = client.post("/completion", json=body)
    assert response.status_code == 200, response.text
    content: str = response.json()["content"]
    return content


def test_a_preset_model_s_adapters_are_listed_and_set_by_model(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    base, adapter = files
    preset = tmp_path / "models.ini"
    preset.write_text(
        f"[tuned]\nmodel = {base}\nlora-scaled = {adapter}:0.25\n[plain]\nmodel = {base}\n"
    )
    with running_router(["--models-preset", str(preset), "--ctx-size", "256"]) as router:
        client = router.client
        listed = client.get("/lora-adapters", params={"model": "tuned"})
        assert listed.status_code == 200, listed.text
        assert [(a["id"], a["path"], a["scale"]) for a in listed.json()] == [
            (0, str(adapter), 0.25)
        ]
        assert client.get("/lora-adapters", params={"model": "plain"}).json() == []

        applied = _completion(client, model="tuned", lora=[{"id": 0, "scale": 1}])
        assert applied != _completion(client, model="plain")
        set_ = client.post(
            "/lora-adapters", params={"model": "tuned"}, json=[{"id": 0, "scale": 1}]
        )
        assert (set_.status_code, set_.json()) == (200, {"success": True})
        assert _completion(client, model="tuned") == applied
        assert [a["scale"] for a in client.get("/lora-adapters?model=tuned").json()] == [1.0]

        missing = client.post("/lora-adapters", json=[{"id": 0, "scale": 1}])
        assert missing.status_code == 400
        assert missing.json()["error"]["message"] == "model name is missing from the request"
        bad = client.post("/lora-adapters?model=plain", json=[{"id": 0, "scale": 1}])
        assert bad.status_code == 400
        assert "[0].id" in bad.json()["error"]["message"]


def test_single_model_mode_needs_no_model_name(files: tuple[Path, Path]) -> None:
    base, adapter = files
    args = ["-m", str(base), "--lora", str(adapter), "--lora-init-without-apply", "-c", "256"]
    with running_router(args) as router:
        client = router.client
        assert [a["scale"] for a in client.get("/lora-adapters").json()] == [0.0]
        set_ = client.post("/lora-adapters", json=[{"id": 0, "scale": 0.5}])
        assert (set_.status_code, set_.json()) == (200, {"success": True})
        assert [a["scale"] for a in client.get("/lora-adapters").json()] == [0.5]


def test_an_adapter_that_does_not_load_fails_the_model_with_the_reason(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    preset = tmp_path / "models.ini"
    preset.write_text(f"[broken]\nmodel = {files[0]}\nlora = {tmp_path / 'missing.gguf'}\n")
    with running_router(["--models-preset", str(preset), "--ctx-size", "256"]) as router:
        response = router.client.post("/completion", json={"model": "broken", "prompt": "hi"})
        assert response.status_code == 500
        assert "failed to load LoRA adapter" in response.json()["error"]["message"]
        status = router.models()["broken"]["status"]
        assert status["failed"] is True
        assert "missing.gguf" in status["error"]
