"""Attaching files to a message: text files as fenced blocks (file chooser, paste, drop), images
as OpenAI ``image_url`` parts, and only for models that say they take images."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from playwright.sync_api import FilePayload, Page, Request, Route, expect

from tests.support.router_process import RouterProcess
from tests.webui.conftest import Shot
from tests.webui.ui import (
    COMPLETIONS,
    DISPATCH,
    drop_image,
    dropped_file,
    last_reply,
    open_ui,
    set_chat_settings,
)

# A 1x1 PNG.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
PIXEL_URI = "data:image/png;base64," + base64.b64encode(PIXEL).decode()


def _last_user_content(request: Request) -> Any:
    body = json.loads(request.post_data or "{}")
    return body["messages"][-1]["content"]


def test_text_files_attach_by_chooser_paste_and_drop(
    router: RouterProcess, page: Page, shot: Shot
) -> None:
    open_ui(page, router)
    set_chat_settings(page, max_tokens=4)
    composer = page.get_by_role("textbox", name="Message")
    composer.fill("Compare these files.")

    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name=re.compile("^Attach files")).click()
    notes: FilePayload = {"name": "notes.txt", "mimeType": "text/plain", "buffer": b"first file\n"}
    chooser.value.set_files(files=[notes])
    expect(composer).to_have_value(re.compile(r"notes\.txt:\n```txt\nfirst file\n```"))

    page.evaluate(DISPATCH, ["paste", [dropped_file("pasted.md", "text/markdown", b"# pasted")]])
    expect(composer).to_have_value(re.compile(r"pasted\.md:\n```md\n# pasted\n```"))

    # A drop with an image for a model that does not take images: the text goes, the image not.
    dropped = [
        dropped_file("dropped.py", "text/x-python", b"print('dropped')"),
        dropped_file("pixel.png", "image/png", PIXEL),
    ]
    page.evaluate(DISPATCH, ["drop", dropped])
    expect(composer).to_have_value(re.compile(r"dropped\.py:\n```py\nprint\('dropped'\)\n```$"))
    expect(page.locator(".composer-note")).to_contain_text("this model does not take images")
    expect(page.locator(".composer-attachments img")).to_have_count(0)
    shot("attached")

    with page.expect_request(COMPLETIONS) as sent:
        composer.press("Enter")
    content = _last_user_content(sent.value)
    assert isinstance(content, str)
    assert content.startswith("Compare these files.\n\nnotes.txt:\n```txt\nfirst file\n```")
    assert "pasted.md:\n```md\n# pasted\n```" in content
    assert "dropped.py:\n```py\nprint('dropped')\n```" in content
    expect(last_reply(page)).to_have_attribute("data-state", "done")
    expect(page.locator(".composer-note")).to_be_empty()


def test_images_go_as_image_url_parts_to_models_that_take_them(
    router: RouterProcess, page: Page, shot: Shot
) -> None:
    # No model of the test set takes images yet: the list is made to say alpha does.
    def vision_listing(route: Route) -> None:
        answer = route.fetch()
        body = answer.json()
        for entry in body["data"]:
            if entry["id"] == "alpha":
                entry["modalities"] = {"vision": True}
        route.fulfill(response=answer, json=body)

    page.route(re.compile(r"/v1/models(\?.*)?$"), vision_listing)
    open_ui(page, router)
    set_chat_settings(page, max_tokens=4)
    thumb = drop_image(page, "pixel.png", PIXEL)
    composer = page.get_by_role("textbox", name="Message")
    composer.fill("What is in this picture?")
    shot("image-attached")

    with page.expect_request(COMPLETIONS) as sent:
        composer.press("Enter")
    assert _last_user_content(sent.value) == [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": PIXEL_URI}},
    ]
    expect(page.locator("article.msg-user .msg-images img")).to_have_attribute("src", PIXEL_URI)
    expect(thumb).to_have_count(0)
    expect(last_reply(page)).not_to_have_attribute("data-state", "streaming")
    shot("image-sent")
    # The page fetches the list again as alpha loads (its events): a fetch still in the handler
    # when the page closes would fail there, after the test (its answer goes with the page).
    page.unroute_all(behavior="ignoreErrors")
