"""``file://`` media from ``--media-path``: the folder's files only, as llama-server reads them
(``handle_media``, ``fs_validate_filename``), refused without the flag, no way out of the
folder by ``..`` or by a link, and no more of a file than the request's media may take."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.files.tiny_media import png_bytes
from worker.host.errors import InvalidInput
from worker.media.rules import MediaBudget, MediaRules
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


async def _read(url: str, media_path: Path | None, budget: int = 1 << 20) -> bytes:
    return await read_media(url, "image_url", MediaBudget(budget), MediaRules(media_path))


async def _refusal(url: str, media_path: Path | None, budget: int = 1 << 20) -> str:
    with pytest.raises(InvalidInput) as caught:
        await _read(url, media_path, budget)
    message: str = caught.value.message
    assert message.startswith("image_url: ")
    return message


@pytest.mark.parametrize(
    "url",
    # Upstream appends the URL's path to the folder's: extra slashes name the same file.
    ["file://photos/cat.png", "file:////photos//cat.png", "file:///photos/cat.png"],
)
async def test_a_file_inside_the_folder_is_read(media: Path, url: str) -> None:
    assert await _read(url, media) == IMAGE


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
    assert await _read("file://latest.png", media) == IMAGE


async def test_a_missing_file_or_a_folder_is_the_clients_error(media: Path) -> None:
    for path in ("photos/dog.png", "photos"):
        message = await _refusal(f"file://{path}", media)
        assert f"file does not exist or cannot be opened: {path}" in message


async def test_a_file_larger_than_the_request_may_take_is_refused_unread(media: Path) -> None:
    # Exactly the budget is read; a byte more is refused by its size, before reading.
    assert await _read("file://photos/cat.png", media, budget=len(IMAGE)) == IMAGE
    message = await _refusal("file://photos/cat.png", media, budget=len(IMAGE) - 1)
    assert f"the request's media exceed {len(IMAGE) - 1} bytes in all" in message


async def test_a_fifo_in_the_folder_is_refused_without_waiting_for_a_writer(media: Path) -> None:
    os.mkfifo(media / "pipe.png")
    message = await _refusal("file://pipe.png", media)
    assert "file does not exist or cannot be opened: pipe.png" in message
