"""First-run polish of the Web UI (issue 17): chat titles cut with an ellipsis, counts in
agreement, error prefixes and load failures said once, "key needed" rather than "offline", toasts
that cover no control, a bounded default for max tokens, and no request for the router's tools
when they are off."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.support.router_process import RouterProcess, running_router
from tests.webui.conftest import Shot
from tests.webui.ui import current_conversation, last_reply, open_ui, send_message

KEY = "corral-polish-key"
LONG_TITLE = "A rather long question about the migration habits of alpine swifts in late summer"


def test_long_chat_titles_end_in_an_ellipsis(
    shared_router: RouterProcess, page: Page, shot: Shot
) -> None:
    open_ui(page, shared_router)
    page.evaluate(
        """async (title) => {
            const { conversations } = window.corral;
            const conversation = conversations.create("alpha", {});
            conversation.title = title;
            await conversations.save(conversation);
        }""",
        LONG_TITLE,
    )
    title = page.locator(".conv-item .conv-title")
    expect(title).to_have_text(LONG_TITLE)
    style = title.evaluate(
        """(el) => {
            const css = getComputedStyle(el);
            return { display: css.display, overflow: css.overflowX, textOverflow: css.textOverflow,
                     whiteSpace: css.whiteSpace, clipped: el.scrollWidth > el.clientWidth };
        }"""
    )
    # text-overflow applies to a block's own line, never to a flex container's items.
    assert style == {
        "display": "block",
        "overflow": "hidden",
        "textOverflow": "ellipsis",
        "whiteSpace": "nowrap",
        "clipped": True,
    }
    shot("ellipsis")


def test_counts_agree_and_a_failed_reload_says_so_once(
    ui_models: Path, tmp_path: Path, page: Page, shot: Shot
) -> None:
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(ui_models / "alpha.gguf", models / "alpha.gguf")
    preset = tmp_path / "models.ini"
    preset.write_text("[alpha]\nttl = 600\n")
    args = ["--models-dir", str(models), "--models-preset", str(preset), "--ctx-size", "512"]
    with running_router(args) as router:
        open_ui(page, router, "#/models")
        summary = page.locator(".manager-summary")
        expect(summary).to_have_text("1 model · 0 running (at most 4)")

        shutil.copy(ui_models / "beta.gguf", models / "beta.gguf")
        page.get_by_role("button", name="Reload list").click()
        expect(summary).to_have_text("2 models · 0 running (at most 4)")

        # A preset that now names a model twice: the reload is refused with the reason.
        preset.write_text("[alpha]\nalias = beta\n")
        page.get_by_role("button", name="Reload list").click()
        toast = page.locator(".toast-error")
        expect(toast).to_have_text(re.compile(r"^Reload failed: \S"))
        assert toast.inner_text().lower().count("reload failed") == 1
        shot("reload-failed")


def test_a_failed_load_is_explained_once(
    shared_router: RouterProcess, page: Page, shot: Shot
) -> None:
    open_ui(page, shared_router)
    page.locator(".picker-button").click()
    page.get_by_role("option", name=re.compile(r"^broken")).click()
    banner = page.locator(".banner-error")
    expect(banner).to_contain_text("broken failed")
    reason = shared_router.models()["broken"]["status"]["error"]
    assert reason

    send_message(page, "hello?")
    reply = last_reply(page)
    expect(reply).to_have_attribute("data-state", "error")
    expect(reply.locator(".msg-load-failed")).to_contain_text("broken did not load")
    expect(banner).to_contain_text(reason)
    expect(reply).not_to_contain_text(reason)
    assert page.locator("main").inner_text().count(reason) == 1
    # The reply keeps the whole error: it shows again should the banner go.
    (message,) = [
        m for m in current_conversation(page)["messages"].values() if m["role"] == "assistant"
    ]
    assert "failed to load" in message["error"]
    shot("said-once")


def test_a_missing_key_is_not_offline(ui_models: Path, page: Page, shot: Shot) -> None:
    args = ["--models-dir", str(ui_models), "--ctx-size", "512", "--api-key", KEY]
    with running_router(args) as router:
        page.goto(f"{router.url}/")
        dialog = page.get_by_role("dialog", name="API key")
        dialog.get_by_role("button", name="Cancel").click()
        connection = page.locator(".connection")
        expect(connection).to_have_text("key needed")
        expect(connection).to_have_attribute("title", re.compile("needs an API key"))
        shot("key-needed")

        page.get_by_role("button", name="API key").click()
        dialog.get_by_role("textbox", name="API key").fill(KEY)
        dialog.get_by_role("button", name="Save key").click()
        expect(connection).to_have_text("live")

        # The toasts (the cancelled dialog's and "saved") cover no control, the send button
        # least of all (issue 54), on a desktop and on a phone.
        expect(page.locator(".toast-info")).to_have_text("API key saved in this browser.")
        _assert_toasts_cover_no_control(page)
        shot("toast")
        page.set_viewport_size({"width": 390, "height": 844})
        page.evaluate("corral.app.toast('Shown on a phone.')")
        expect(page.locator(".toast").last).to_have_text("Shown on a phone.")
        _assert_toasts_cover_no_control(page)
        shot("toast-390")


def _assert_toasts_cover_no_control(page: Page) -> None:
    controls = page.locator("button:visible, input:visible, textarea:visible, a[href]:visible")
    boxes = [controls.nth(index).bounding_box() for index in range(controls.count())]
    assert page.locator(".send-btn").bounding_box() in boxes
    toasts = page.locator(".toast")
    for index in range(toasts.count()):
        toast = toasts.nth(index).bounding_box()
        assert toast
        for box in boxes:
            assert box
            apart = (
                toast["x"] + toast["width"] <= box["x"]
                or box["x"] + box["width"] <= toast["x"]
                or toast["y"] + toast["height"] <= box["y"]
                or box["y"] + box["height"] <= toast["y"]
            )
            assert apart, (toasts.nth(index).inner_text(), toast, box)


def test_new_chats_have_bounded_max_tokens(
    shared_router: RouterProcess, page: Page, shot: Shot
) -> None:
    open_ui(page, shared_router)
    page.get_by_role("button", name="Chat settings").click()
    dialog = page.get_by_role("dialog", name="Chat settings")
    field = dialog.locator("[name=max_tokens]")
    expect(field).to_have_value("1024")
    expect(dialog).to_contain_text("1024 tokens")
    shot("settings")
    dialog.get_by_role("button", name="Cancel").click()

    with page.expect_request(lambda r: r.url.endswith("/v1/chat/completions")) as sent:
        send_message(page, "Tell me everything.")
    assert json.loads(sent.value.post_data or "{}")["max_tokens"] == 1024
    expect(last_reply(page)).to_have_attribute("data-state", "done")

    # Changed in the settings, the new value goes with the request (here of a new chat: the
    # first one's context is full).
    page.get_by_role("link", name="New chat").click()
    expect(page.locator(".empty h1")).to_have_text("Chat with alpha")
    page.get_by_role("button", name="Chat settings").click()
    expect(field).to_have_value("1024")
    field.fill("5")
    dialog.get_by_role("button", name="Save").click()
    with page.expect_request(lambda r: r.url.endswith("/v1/chat/completions")) as sent:
        send_message(page, "Short, please.")
    assert json.loads(sent.value.post_data or "{}")["max_tokens"] == 5
    expect(last_reply(page)).to_have_attribute("data-state", "done")


def test_with_the_routers_tools_off_the_page_never_asks_for_them(
    shared_router: RouterProcess, page: Page
) -> None:
    # /v1/key says the tools are off: asking GET /tools would only log its 403 in the console.
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    open_ui(page, shared_router)
    send_message(page, "Hello?")  # a chat offers the router's tools when there are any
    expect(last_reply(page)).to_have_attribute("data-state", "done")
    page.get_by_role("button", name="Chat settings").click()  # the dialog lists them too
    expect(page.get_by_role("dialog", name="Chat settings")).to_be_visible()
    assert any(url.endswith("/v1/key") for url in asked)
    assert not [url for url in asked if url.endswith("/tools")]
