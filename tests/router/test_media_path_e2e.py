"""``--media-path`` through the router, as llama-server: ``file://`` images read from that folder
by a vision model's worker, nothing outside it, and nothing at all without the flag; per model
as a preset key. A real router, real workers, a real projector."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.files.tiny_media import png_bytes
from tests.support.files.tiny_mmproj import IMAGE_TOKENS, write_tiny_mmproj
from tests.support.router_process import RouterProcess, running_router


@pytest.fixture(scope="module")
def seer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models dir whose ``seer`` is a vision model (a model and its projector)."""
    folder = tmp_path_factory.mktemp("models")
    (folder / "seer").mkdir()
    write_tiny_gguf(folder / "seer" / "seer-Q8_0.gguf", name="seer")
    write_tiny_mmproj(folder / "seer" / "mmproj-seer-F32.gguf")
    return folder


@pytest.fixture
def media(tmp_path: Path) -> Path:
    """``media/cat.png`` in the folder, ``secret.png`` next to it."""
    (tmp_path / "media").mkdir()
    (tmp_path / "media" / "cat.png").write_bytes(png_bytes(seed=1))
    (tmp_path / "secret.png").write_bytes(png_bytes(seed=2))
    return tmp_path / "media"


def chat(router: RouterProcess, model: str, url: str | None) -> Any:
    content: list[dict[str, Any]] = [{"type": "text", "text": "What is this:"}]
    if url is not None:
        content.append({"type": "image_url", "image_url": {"url": url}})
    body = {"model": model, "messages": [{"role": "user", "content": content}], "max_tokens": 1}
    return router.client.post("/v1/chat/completions", json=body, timeout=120)


def refusal(router: RouterProcess, model: str, url: str) -> str:
    reply = chat(router, model, url)
    assert reply.status_code == 400, reply.text
    message: str = reply.json()["error"]["message"]
    return message


def test_file_urls_read_the_media_folder_only(seer: Path, media: Path) -> None:
    args = ["--models-dir", str(seer), "--ctx-size", "512", "--media-path", str(media)]
    with running_router(args) as router:
        seen = chat(router, "seer", "file://cat.png")
        assert seen.status_code == 200, seen.text
        plain = chat(router, "seer", None).json()["usage"]["prompt_tokens"]
        assert seen.json()["usage"]["prompt_tokens"] == plain + IMAGE_TOKENS + 1  # + a newline
        assert "file path is not allowed: ../secret.png" in refusal(
            router, "seer", "file://../secret.png"
        )
        # An absolute path is read inside the folder too, where there is no such file.
        outside = media.parent / "secret.png"
        assert "file does not exist or cannot be opened" in refusal(
            router, "seer", f"file://{outside}"
        )
        (media / "escape.png").symlink_to(outside)
        assert "file path is not allowed: escape.png" in refusal(
            router, "seer", "file://escape.png"
        )


def test_media_path_is_per_model_and_off_without_it(
    seer: Path, media: Path, tmp_path: Path
) -> None:
    model, mmproj = seer / "seer" / "seer-Q8_0.gguf", seer / "seer" / "mmproj-seer-F32.gguf"
    preset = tmp_path / "models.ini"
    preset.write_text(
        f"[reader]\nmodel = {model}\nmmproj = {mmproj}\nmedia-path = {media}\n\n"
        f"[blind]\nmodel = {model}\nmmproj = {mmproj}\n"
    )
    with running_router(["--models-preset", str(preset), "--ctx-size", "512"]) as router:
        assert chat(router, "reader", "file://cat.png").status_code == 200
        assert "file:// URLs are not allowed unless --media-path is specified" in refusal(
            router, "blind", "file://cat.png"
        )
