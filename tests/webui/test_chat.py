"""Chatting in the Web UI: streaming replies, Markdown, settings, branches, copy, themes."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import BrowserContext, Page, expect

from tests.support.router_process import RouterProcess
from tests.webui.conftest import DESKTOP, PHONE, Shot
from tests.webui.ui import (
    current_conversation,
    last_reply,
    open_ui,
    send_message,
    set_chat_settings,
)

SYSTEM = "You answer in one short paragraph."


def _replies(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in conversation["messages"].values() if m["role"] == "assistant"]


def test_chat_round_trip_with_settings_branches_and_copy(
    shared_router: RouterProcess, page: Page, context: BrowserContext, shot: Shot
) -> None:
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=shared_router.url)
    open_ui(page, shared_router)
    expect(page.locator(".picker-button")).to_contain_text("alpha")
    shot("new-chat")

    set_chat_settings(page, system=SYSTEM, max_tokens=24, temperature=0.5)
    send_message(page, "Hello! Show me some *Markdown*.")
    reply = last_reply(page)
    expect(reply).to_have_attribute("data-state", "done")
    # Rendered as Markdown (paragraphs), with the worker's timings and the context use.
    expect(reply.locator(".msg-body.md p").first).to_be_visible()
    expect(reply.locator(".msg-stats")).to_contain_text("tok/s")
    expect(reply.locator(".msg-stats")).to_contain_text("context")
    expect(page.locator(".composer-info")).to_contain_text("Context:")
    expect(page.locator("article.msg-user .msg-body")).to_have_text(
        "Hello! Show me some *Markdown*."
    )
    expect(page.locator(".conv-item")).to_have_count(1)
    expect(page.locator(".conv-item")).to_contain_text("Hello! Show me some *Markdown*.")
    shot("reply")

    conversation = current_conversation(page)
    assert conversation["settings"]["system"] == SYSTEM
    (answer,) = _replies(conversation)
    assert answer["content"], "the reply has text"
    assert 0 < answer["stats"]["completionTokens"] <= 24, "max tokens reached the request"
    assert answer["stats"]["contextSize"] == 512

    # Copy puts the raw Markdown on the clipboard.
    reply.get_by_role("button", name="Copy", exact=True).click()
    clipboard = page.evaluate("() => navigator.clipboard.readText()")
    assert clipboard == answer["content"]

    # Kept in IndexedDB: a reload shows the same conversation.
    page.reload()
    expect(last_reply(page)).to_have_attribute("data-state", "done")
    expect(page.locator(".conv-item")).to_have_count(1)

    # Regenerate: a second version of the reply, and the first is still reachable.
    last_reply(page).get_by_role("button", name="Regenerate").click()
    expect(last_reply(page).locator(".branch-count")).to_have_text("2/2")
    expect(last_reply(page)).to_have_attribute("data-state", "done")
    last_reply(page).get_by_role("button", name="Previous version").click()
    expect(last_reply(page).locator(".branch-count")).to_have_text("1/2")
    expect(last_reply(page).locator(".msg-body")).not_to_be_empty()

    # Edit the question: a new branch of the thread with its own reply.
    user = page.locator("article.msg-user").first
    user.get_by_role("button", name="Edit and resend").click()
    editor = user.get_by_role("textbox", name="Edit message")
    editor.fill("A different question")
    user.get_by_role("button", name="Send").click()
    expect(page.locator("article.msg-user .branch-count")).to_have_text("2/2")
    expect(page.locator("article.msg-user .msg-body")).to_have_text("A different question")
    expect(last_reply(page)).to_have_attribute("data-state", "done")
    assert len(_replies(current_conversation(page))) == 3
    shot("branches")

    # Shift+Enter is a new line, not a send.
    composer = page.get_by_role("textbox", name="Message")
    composer.fill("first line")
    composer.press("Shift+Enter")
    composer.press_sequentially("second line")
    expect(composer).to_have_value("first line\nsecond line")
    expect(page.locator("article.msg-user")).to_have_count(1)


def test_markdown_is_rendered_and_sanitised(shared_router: RouterProcess, page: Page) -> None:
    """Model output never becomes markup: raw HTML is text, unsafe links and images go."""
    open_ui(page, shared_router)
    source = (
        "# Title\n\n**bold** <img src=x onerror=alert(1)> <script>alert(2)</script>\n\n"
        "[bad](javascript:alert(3)) [good](https://example.com/) ![pic](https://evil.example/p.png)"
        '\n\n<a href="javascript:alert(4)">raw link</a>\n\n```python\ndef f():\n    return 1\n```\n'
    )
    result: dict[str, Any] = page.evaluate(
        """async (source) => {
            const { renderMarkdown } = await import('./assets/js/markdown.js');
            const target = document.createElement('div');
            renderMarkdown(target, source);
            const links = [...target.querySelectorAll('a')].map((a) => a.getAttribute('href'));
            return {
                text: target.textContent,
                links,
                tags: [...target.querySelectorAll('*')].map((el) => el.tagName.toLowerCase()),
                attributes: [...target.querySelectorAll('*')].flatMap(
                    (el) => [...el.attributes].map((attr) => attr.name)),
                keyword: target.querySelector('pre .hljs-keyword')?.textContent ?? null,
            };
        }""",
        source,
    )
    tags = set(result["tags"])
    assert {"h1", "strong", "pre", "code"} <= tags
    assert not tags & {"img", "script", "iframe", "style"}
    assert result["links"] == ["https://example.com/", "https://evil.example/p.png"]
    assert not any(name.startswith("on") for name in result["attributes"])
    assert "<img src=x onerror=alert(1)>" in result["text"], "raw HTML is shown as text"
    assert "<script>alert(2)</script>" in result["text"]
    assert result["keyword"] == "def", "code blocks are highlighted"


def test_themes_and_phone_layout(shared_router: RouterProcess, page: Page, shot: Shot) -> None:
    open_ui(page, shared_router)
    set_chat_settings(page, max_tokens=40)
    send_message(page, "Show me a code block")
    expect(last_reply(page)).to_have_attribute("data-state", "done")

    def background() -> str:
        color: str = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        return color

    light = background()
    shot("light")
    page.emulate_media(color_scheme="dark")
    dark = background()
    assert dark != light
    shot("dark-system")

    # The theme button cycles system → light → dark and is remembered.
    theme = page.locator(".sidebar-foot .icon-btn").first
    theme.click()
    expect(theme).to_have_attribute("title", "Theme: light (click to change)")
    assert background() == light
    theme.click()
    expect(theme).to_have_attribute("title", "Theme: dark (click to change)")
    page.emulate_media(color_scheme="light")
    assert background() == dark
    page.reload()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    assert background() == dark

    # Phone width: the sidebar becomes a drawer behind the menu button.
    page.set_viewport_size(PHONE)
    sidebar = page.locator("#sidebar")
    expect(sidebar).not_to_be_in_viewport()
    shot("phone-dark")
    page.get_by_role("button", name="Show conversations").click()
    expect(sidebar).to_be_in_viewport()
    shot("phone-sidebar")
    theme.click()  # → system, which is light here
    expect(page.locator("html")).not_to_have_attribute("data-theme", "dark")
    page.keyboard.press("Escape")
    expect(sidebar).not_to_be_in_viewport()
    shot("phone-light")
    page.set_viewport_size(DESKTOP)
