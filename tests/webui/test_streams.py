"""Resumable replies in the Web UI: a reload mid-generation reattaches and finishes the reply;
Esc stops a generation on the server too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, Request, expect

from tests.support.router_process import RouterProcess, running_router
from tests.webui.conftest import Shot
from tests.webui.ui import (
    current_conversation,
    last_reply,
    open_ui,
    send_message,
    set_chat_settings,
)

# Random-weight models rarely stop by themselves; ignore_eos makes sure they never do, so the
# reply is exactly LONG tokens. The page reloads after its first ~300 characters; a faster
# machine may finish generating first, and the session kept after the end
# (worker/answer/stream_sessions.py) still replays it. More tokens only cost the browser time.
LONG = 1500
ENDLESS = {"ignore_eos": True}


@pytest.fixture
def big_context(ui_models: Path) -> Iterator[RouterProcess]:
    args = ["--models-dir", str(ui_models), "--ctx-size", "16384"]
    with running_router(args) as router:
        yield router


def _reply(page: Page) -> dict[str, Any]:
    conversation = current_conversation(page)
    replies = [m for m in conversation["messages"].values() if m["role"] == "assistant"]
    assert len(replies) == 1, "one reply: resumed, never generated again"
    reply: dict[str, Any] = replies[0]
    return reply


def _wait_for_text(page: Page, characters: int) -> None:
    page.wait_for_function(
        """(n) => (document.querySelector('article.msg-assistant .msg-body')
                   ?.textContent.length ?? 0) > n""",
        arg=characters,
    )


def test_reloading_mid_generation_reattaches_and_finishes_the_reply(
    big_context: RouterProcess, page: Page, shot: Shot
) -> None:
    open_ui(page, big_context)
    set_chat_settings(page, max_tokens=LONG, extra=ENDLESS)
    send_message(page, "Tell me a very long story.")
    _wait_for_text(page, 300)
    shown = _reply(page)["content"]
    shot("before-reload")

    requests: list[str] = []

    def record(request: Request) -> None:
        if "/v1/" in request.url:
            requests.append(f"{request.method} {request.url.removeprefix(big_context.url)}")

    page.on("request", record)
    page.reload()
    reply = last_reply(page)
    expect(reply.locator(".msg-body")).not_to_be_empty()
    shot("after-reload")
    expect(reply).to_have_attribute("data-state", "done", timeout=300_000)
    shot("finished")

    final = _reply(page)
    assert final["finish"] == "length"
    assert final["stats"]["completionTokens"] == LONG, "every token of the generation arrived"
    assert len(final["content"]) > len(shown)
    assert final["content"].startswith(shown), "continued where the page left off"
    assert current_conversation(page)["stream"] is None
    # Found again with the stream identity and replayed; no new generation was started.
    assert "POST /v1/streams/lookup" in requests
    assert any(r.startswith("GET /v1/stream?conv_id=") for r in requests), requests
    assert not any(r.startswith("POST /v1/chat/completions") for r in requests), requests
    expect(reply.locator(".msg-stats")).to_contain_text(f"{LONG:,} tokens")


def test_escape_stops_the_generation_on_the_server(
    big_context: RouterProcess, page: Page, shot: Shot
) -> None:
    open_ui(page, big_context)
    set_chat_settings(page, max_tokens=LONG, extra=ENDLESS)
    send_message(page, "Go on forever.")
    _wait_for_text(page, 100)
    conversation = current_conversation(page)
    stream = f"{conversation['id']}::alpha"
    with page.expect_response(
        lambda response: response.request.method == "DELETE" and "/v1/stream?" in response.url
    ) as deletion:
        page.keyboard.press("Escape")
    assert deletion.value.status == 204
    reply = last_reply(page)
    expect(reply).to_have_attribute("data-state", "stopped")
    expect(reply.locator(".msg-note")).to_have_text("Stopped.")
    shot("stopped")
    stopped = _reply(page)
    assert stopped["content"], "the text so far is kept"
    # DELETE /v1/stream ended the session: the router no longer knows it.
    found = big_context.client.post("/v1/streams/lookup", json={"conversation_ids": [stream]})
    assert found.json() == []
    assert big_context.client.get("/v1/stream", params={"conv_id": stream}).status_code == 404
    # The model is free again: the next message is answered.
    set_chat_settings(page, max_tokens=8, extra="")
    send_message(page, "Short, please.")
    expect(last_reply(page)).to_have_attribute("data-state", "done")


def test_reloading_while_the_model_loads_still_gets_the_reply(
    ui_models: Path, page: Page, shot: Shot
) -> None:
    # Upstream's debug aid holds the load for 2 s: the page goes away while the request waits.
    args = ["--models-dir", str(ui_models), "--ctx-size", "512"]
    with running_router(args, env={"LLAMA_SERVER_DEBUG_FAKE_TIMING": "1"}) as router:
        open_ui(page, router)
        set_chat_settings(page, max_tokens=16, extra=ENDLESS)
        send_message(page, "Are you there?")
        expect(page.locator(".picker-button .badge")).to_have_attribute("data-status", "loading")
        shot("loading")
        page.reload()
        reply = last_reply(page)
        expect(reply).to_have_attribute("data-state", "done")
        shot("done")
        final = _reply(page)
        assert final["stats"]["completionTokens"] == 16
        assert final["content"]
