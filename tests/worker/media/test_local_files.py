"""``file://`` media from ``--media-path``: the folder's files only, as llama-server reads them
(``handle_media``, ``fs_validate_filename``), refused without the flag, and no way out of the
folder by ``..`` or by a link."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tiny_media import png_bytes
from worker.host.errors import InvalidInput
from worker.media.sources import read_media

pytestmark = pytest.mark.anyio
IMAGE = png_bytes()


@pytest.fixture
def media(tmp_path: Path) -> Path:
    """``media/photos/cat.png`` inside the folder, ``secret.png`` beside the folder."""
    folder = tmp_path / "media"
    (folder / "photos").mkdir(parents=True)
    (folder / "photos" / "cat.png").write_bytes(IMAGE)
    (tmp_path / "secret.png").write_bytes(png_bytes(seed=1))
    return folder


async def _refusal(url: str, media_path: Path | None) -> str:
    with pytest.raises(InvalidInput) as caught:
        await read_media(url, "image_url", media_path=media_path)
    message: str = caught.value.message
    assert message.startswith("image_url: ")
    return message


@pytest.mark.parametrize(
    "url",
    # Upstream appends the URL's path to the folder's: extra slashes name the same file.
    ["file://photos/cat.png", "file:////photos//cat.png", "file:///photos/cat.png"],
)
async def test_a_file_inside_the_folder_is_read(media: Path, url: str) -> None:
    assert await read_media(url, "image_url", media_path=media) == IMAGE


async def test_without_a_media_path_every_file_url_is_refused(media: Path) -> None:
    message = await _refusal(f"file://{media}/photos/cat.png", None)
    assert "file:// URLs are not allowed unless --media-path is specified" in message


@pytest.mark.parametrize(
    "path",
    ["../secret.png", "photos/../../secret.png", "photos/..", "..", "photos/cat.png.", "a:b.png"],
)
async def test_paths_upstream_refuses_are_refused(media: Path, path: str) -> None:
    assert f"file path is not allowed: {path}" in await _refusal(f"file://{path}", media)


async def test_a_link_out_of_the_folder_is_refused(media: Path) -> None:
    (media / "photos" / "escape.png").symlink_to(media.parent / "secret.png")
    (media / "outside").symlink_to(media.parent)
    for path in ("photos/escape.png", "outside/secret.png"):
        assert f"file path is not allowed: {path}" in await _refusal(f"file://{path}", media)


async def test_a_link_that_stays_inside_is_followed(media: Path) -> None:
    (media / "latest.png").symlink_to(media / "photos" / "cat.png")
    assert await read_media("file://latest.png", "image_url", media_path=media) == IMAGE


async def test_a_missing_file_or_a_folder_is_the_clients_error(media: Path) -> None:
    for path in ("photos/dog.png", "photos"):
        message = await _refusal(f"file://{path}", media)
        assert f"file does not exist or cannot be opened: {path}" in message
