"""A vision model in the Web UI: the listing says it takes images, so an attached picture goes
to the model, which answers with the picture counted in its prompt."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.files.tiny_media import png_bytes
from tests.support.files.tiny_mmproj import IMAGE_TOKENS, write_tiny_mmproj
from tests.support.router_process import RouterProcess, running_router
from tests.webui.conftest import Shot
from tests.webui.ui import COMPLETIONS, drop_image, last_reply, open_ui, set_chat_settings

PICTURE = png_bytes(seed=1)
PICTURE_URI = "data:image/png;base64," + base64.b64encode(PICTURE).decode()


@pytest.fixture
def vision_router(tmp_path: Path) -> Iterator[RouterProcess]:
    seer = tmp_path / "models" / "seer"
    seer.mkdir(parents=True)
    write_tiny_gguf(seer / "seer.gguf", name="seer", attention_gain=10.0)
    write_tiny_mmproj(seer / "mmproj-seer.gguf")
    with running_router(["--models-dir", str(seer.parent), "--ctx-size", "512"]) as process:
        yield process


def test_an_image_attached_to_a_vision_model_gets_an_answer(
    vision_router: RouterProcess, page: Page, shot: Shot
) -> None:
    open_ui(page, vision_router)
    set_chat_settings(page, max_tokens=4)
    drop_image(page, "picture.png", PICTURE)
    composer = page.get_by_role("textbox", name="Message")
    composer.fill("What is this:")
    shot("picture-attached")

    with page.expect_response(COMPLETIONS) as answered:
        composer.press("Enter")
    assert answered.value.status == 200
    expect(last_reply(page)).to_have_attribute("data-state", "done")
    expect(page.locator("article.msg-user .msg-images img")).to_have_attribute("src", PICTURE_URI)
    assert last_reply(page).inner_text().strip()
    shot("answered")

    # The same question without the picture, straight to the model: one image's tokens fewer.
    body = {
        "model": "seer",
        # An empty part where the picture goes: parts join with newlines, so the two prompts
        # differ by the picture's tokens alone.
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "What is this:"}, {"type": "text", "text": ""},
        ]}],
        "max_tokens": 1,
    }  # fmt: skip
    plain = vision_router.client.post("/v1/chat/completions", json=body).json()
    with_picture = vision_router.client.post(
        "/v1/chat/completions",
        json={
            **body,
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "What is this:"},
                {"type": "image_url", "image_url": {"url": PICTURE_URI}},
            ]}],
        },
    ).json()  # fmt: skip
    assert with_picture["usage"]["prompt_tokens"] == plain["usage"]["prompt_tokens"] + IMAGE_TOKENS
