"""A thinking model's reasoning in the Web UI: streamed apart from the answer, shown collapsed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.support.files.tiny_gguf import CHATML_TEMPLATE, write_tiny_gguf
from tests.support.router_process import RouterProcess, running_router
from tests.webui.conftest import Shot
from tests.webui.ui import (
    current_conversation,
    last_reply,
    open_ui,
    send_message,
    set_chat_settings,
)

# ChatML plus the <think> tags in the source: the worker reads <think>…</think> as reasoning.
THINKER_TEMPLATE = "{#- thinks in <think> and </think> -#}" + CHATML_TEMPLATE
THOUGHT = "The user greets me."
ANSWER = "Hello there."


@pytest.fixture(scope="module")
def thinker_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("thinker")
    write_tiny_gguf(directory / "thinker.gguf", name="thinker", chat_template=THINKER_TEMPLATE)
    return directory


@pytest.fixture
def router(thinker_models: Path) -> Iterator[RouterProcess]:
    with running_router(["--models-dir", str(thinker_models), "--ctx-size", "512"]) as process:
        yield process


def test_reasoning_is_shown_collapsed_above_the_answer(
    router: RouterProcess, page: Page, shot: Shot
) -> None:
    open_ui(page, router)
    expect(page.locator(".picker-button")).to_contain_text("thinker")
    # A grammar makes the random model think and answer in the model's own syntax.
    grammar = f'root ::= "<think>{THOUGHT}</think>{ANSWER}"'
    set_chat_settings(page, extra=json.dumps({"grammar": grammar}))
    send_message(page, "Hi!")
    reply = last_reply(page)
    expect(reply).to_have_attribute("data-state", "done")
    expect(reply.locator(".msg-body")).to_have_text(ANSWER)
    reasoning = reply.locator("details.msg-reasoning")
    expect(reasoning).to_be_visible()
    expect(reasoning).not_to_have_attribute("open", "")  # collapsed
    expect(reasoning.locator(".msg-reasoning-text")).to_be_hidden()
    shot("collapsed")
    reasoning.locator("summary").click()
    expect(reasoning.locator(".msg-reasoning-text")).to_have_text(THOUGHT)
    shot("expanded")
    (message,) = [m for m in current_conversation(page)["messages"].values()
                  if m["role"] == "assistant"]  # fmt: skip
    assert (message["reasoning"], message["content"]) == (THOUGHT, ANSWER)
