"""Steps the Web UI tests share: opening the page, chat settings, sending, reading the store."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from playwright.sync_api import Locator, Page, expect

from tests.support.router_process import RouterProcess

__all__ = [
    "COMPLETIONS",
    "DISPATCH",
    "current_conversation",
    "drop_image",
    "dropped_file",
    "last_reply",
    "open_ui",
    "send_message",
    "set_chat_settings",
]

COMPLETIONS = re.compile(r"/v1/chat/completions$")

# Builds File objects in the page and dispatches a paste on the textarea or a drop on the
# composer, as a browser does for a real paste or drag-and-drop.
DISPATCH = """([kind, files]) => {
    const data = new DataTransfer();
    for (const file of files) {
        const bytes = Uint8Array.from(atob(file.b64), (c) => c.charCodeAt(0));
        data.items.add(new File([bytes], file.name, { type: file.type }));
    }
    const event = kind === "paste"
        ? new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true })
        : new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true });
    const target = kind === "paste" ? ".composer-input" : ".composer";
    document.querySelector(target).dispatchEvent(event);
}"""


def dropped_file(name: str, mime: str, content: bytes) -> dict[str, str]:
    """A file for :data:`DISPATCH`."""
    return {"name": name, "type": mime, "b64": base64.b64encode(content).decode()}


def drop_image(page: Page, name: str, content: bytes) -> Locator:
    """Drop a PNG on the composer; its thumbnail, once shown with no note against it."""
    page.evaluate(DISPATCH, ["drop", [dropped_file(name, "image/png", content)]])
    thumb = page.locator(".composer-attachments img")
    uri = "data:image/png;base64," + base64.b64encode(content).decode()
    expect(thumb).to_have_attribute("src", uri)
    expect(page.locator(".composer-note")).to_be_empty()
    return thumb


def open_ui(page: Page, router: RouterProcess, fragment: str = "") -> None:
    """Load the page and wait until it has the model list and the live event stream."""
    page.goto(f"{router.url}/{fragment}")
    expect(page.locator(".connection")).to_have_text("live")


def set_chat_settings(page: Page, **fields: Any) -> None:
    """Fill the chat settings dialog (system, temperature, top_p, max_tokens, extra, the tool
    settings; a bool ticks a box) and save."""
    page.get_by_role("button", name="Chat settings").click()
    dialog = page.get_by_role("dialog", name="Chat settings")
    for name, value in fields.items():
        if isinstance(value, bool):
            dialog.locator(f"[name={name}]").set_checked(value)
            continue
        text = json.dumps(value) if isinstance(value, dict) else str(value)
        dialog.locator(f"[name={name}]").fill(text)
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_have_count(0)


def send_message(page: Page, text: str) -> None:
    composer = page.get_by_role("textbox", name="Message")
    composer.fill(text)
    composer.press("Enter")


def last_reply(page: Page) -> Locator:
    return page.locator("article.msg-assistant").last


def current_conversation(page: Page) -> dict[str, Any]:
    """The conversation on screen, as the page's store holds it (messages, stream, settings)."""
    value: dict[str, Any] = page.evaluate(
        """() => {
            const id = location.hash.replace('#/c/', '');
            return JSON.parse(JSON.stringify(window.corral.conversations.get(id)));
        }"""
    )
    return value
