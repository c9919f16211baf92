"""Vision models through the router: a projector found beside a model (hub cache, models dir)
or named (``--mmproj``, preset ``mmproj``) reaches its worker, and ``/models`` says what each
model reads; ``no-mmproj`` turns the pairing off."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from tests.support.files.hub_cache import REPO, lay_out
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.files.tiny_media import png_bytes
from tests.support.files.tiny_mmproj import IMAGE_TOKENS, write_tiny_mmproj
from tests.support.router_process import RouterProcess, running_router

IMAGE_URI = "data:image/png;base64," + base64.b64encode(png_bytes(seed=1)).decode()


@pytest.fixture(scope="module")
def seer_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("seer")
    model = write_tiny_gguf(folder / "seer-Q8_0.gguf", name="seer", attention_gain=10.0)
    return model, write_tiny_mmproj(folder / "mmproj-seer-F32.gguf")


def _chat(router: RouterProcess, model: str, *, image: bool) -> Any:
    content: list[dict[str, Any]] = [{"type": "text", "text": "What is this:"}]
    # Without the image an empty part stands in its place: parts are joined with newlines,
    # so both prompts differ by the image's tokens alone.
    if image:
        content.append({"type": "image_url", "image_url": {"url": IMAGE_URI}})
    else:
        content.append({"type": "text", "text": ""})
    body = {
        "model": model,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": 4,
        "temperature": 0,
    }
    return router.client.post("/v1/chat/completions", json=body, timeout=120)


def _reads(router: RouterProcess) -> dict[str, tuple[list[str], list[str]]]:
    return {
        name: (entry["architecture"]["input_modalities"], entry["capabilities"])
        for name, entry in router.models().items()
    }


def test_a_models_dir_projector_pairs_with_its_model(
    seer_files: tuple[Path, Path], models_dir: Path, tmp_path: Path
) -> None:
    model, mmproj = seer_files
    (tmp_path / "seer").mkdir()
    (tmp_path / "seer" / model.name).symlink_to(model)
    (tmp_path / "seer" / mmproj.name).symlink_to(mmproj)
    (tmp_path / "alpha.gguf").symlink_to(models_dir / "alpha.gguf")
    with running_router(["--models-dir", str(tmp_path), "--ctx-size", "512"]) as router:
        assert _reads(router) == {
            "alpha": (["text"], ["completion"]),
            "seer": (["text", "image"], ["completion", "multimodal", "vision"]),
        }
        plain, seen = _chat(router, "seer", image=False), _chat(router, "seer", image=True)
        assert seen.status_code == 200, seen.text
        assert seen.json()["usage"]["prompt_tokens"] == (
            plain.json()["usage"]["prompt_tokens"] + IMAGE_TOKENS
        )
        assert "--mmproj" in router.models()["seer"]["status"]["args"]
        refused = _chat(router, "alpha", image=True)
        assert refused.status_code == 400
        assert "image input is not supported" in refused.json()["error"]["message"]


def test_a_hub_projector_pairs_unless_no_mmproj(
    seer_files: tuple[Path, Path], tmp_path: Path
) -> None:
    model, mmproj = seer_files
    cache = tmp_path / "hub"
    lay_out(cache, {"seer-Q8_0.gguf": model.read_bytes(), mmproj.name: mmproj.read_bytes()})
    env = {"HF_HUB_CACHE": str(cache)}
    name = f"{REPO}:Q8_0"
    with running_router(["--ctx-size", "512"], env) as router:
        assert _reads(router)[name][0] == ["text", "image"]
        assert _chat(router, name, image=True).status_code == 200
    with running_router(["--ctx-size", "512", "--no-mmproj"], env) as router:
        assert _reads(router)[name] == (["text"], ["completion"])
        assert _chat(router, name, image=True).status_code == 400


def test_mmproj_flag_pairs_with_the_m_model(seer_files: tuple[Path, Path]) -> None:
    model, mmproj = seer_files
    with running_router(["-m", str(model), "--mmproj", str(mmproj), "--ctx-size", "512"]) as r:
        reply = _chat(r, "anything", image=True)
        assert reply.status_code == 200, reply.text
        props = r.client.get("/props").json()
        assert props["modalities"] == {"vision": True, "video": False, "audio": False}


def test_a_missing_mmproj_file_stops_startup(seer_files: tuple[Path, Path], tmp_path: Path) -> None:
    model, _ = seer_files
    args = ["-m", str(model), "--mmproj", str(tmp_path / "none.gguf")]
    with pytest.raises(RuntimeError, match=r"--mmproj .*: no such file"), running_router(args):
        pass


def test_a_projector_that_does_not_load_fails_the_load_saying_so(
    seer_files: tuple[Path, Path], tmp_path: Path
) -> None:
    model, _ = seer_files
    (tmp_path / "seer").mkdir()
    (tmp_path / "seer" / model.name).symlink_to(model)
    # A header the router's check passes (version 3, no keys or tensors, 32 bytes with its
    # padding) but clip.cpp refuses; a malformed header is listed and refused before any load
    # (tests/router/catalogue/test_malformed_models.py).
    (tmp_path / "seer" / "mmproj-seer.gguf").write_bytes(b"GGUF\x03" + b"\x00" * 27)
    with running_router(["--models-dir", str(tmp_path)]) as router:
        reply = _chat(router, "seer", image=False)
        assert reply.status_code == 500
        status = router.models()["seer"]["status"]
        assert status["failed"] is True
        assert "failed to load the multimodal projector" in status["error"]
