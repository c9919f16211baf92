"""Steps the Web UI tests share: opening the page, chat settings, sending, reading the store."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Locator, Page, expect

from tests.support.router_process import RouterProcess

__all__ = [
    "current_conversation",
    "last_reply",
    "open_ui",
    "send_message",
    "set_chat_settings",
]


def open_ui(page: Page, router: RouterProcess, fragment: str = "") -> None:
    """Load the page and wait until it has the model list and the live event stream."""
    page.goto(f"{router.url}/{fragment}")
    expect(page.locator(".connection")).to_have_text("live")


def set_chat_settings(page: Page, **fields: Any) -> None:
    """Fill the chat settings dialog (system, temperature, top_p, max_tokens, extra) and save."""
    page.get_by_role("button", name="Chat settings").click()
    dialog = page.get_by_role("dialog", name="Chat settings")
    for name, value in fields.items():
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
