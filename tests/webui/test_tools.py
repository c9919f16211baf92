"""The Web UI's tool loop against a router with tools on: the model's calls run through
``POST /tools``, shown collapsed, their results sent back as ``tool`` messages; write tools are
confirmed first; a model's preset ``tools`` key narrows what its chats are offered.

The random-weight model calls tools because the chat's extra parameters say so:
``tool_choice: required`` makes every reply one call (``parallel_tool_calls: false``), and a
logit bias on ``"`` closes every string the grammar opens at once, so the call is short.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, Request, expect

from tests.support.files.hermes_model import HERMES_TEMPLATE, USER_TOKENS
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.router_process import RouterProcess, running_router
from tests.webui.conftest import Shot
from tests.webui.ui import (
    COMPLETIONS,
    current_conversation,
    open_ui,
    send_message,
    set_chat_settings,
)

TOOLS = re.compile(r"/tools$")


@pytest.fixture(scope="module")
def tool_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``reader`` is offered get_info, ``writer`` write_file (preset ``tools`` keys)."""
    directory = tmp_path_factory.mktemp("tool-models")
    for name in ("reader", "writer"):
        write_tiny_gguf(directory / f"{name}.gguf", name=name, chat_template=HERMES_TEMPLATE,
                        user_tokens=USER_TOKENS)  # fmt: skip
    preset = "[reader]\ntools = get_info\n[writer]\ntools = write_file\n"
    (directory / "models.ini").write_text(preset)
    return directory


@pytest.fixture
def tools_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    return root


@pytest.fixture
def router(tool_models: Path, tools_root: Path) -> Iterator[RouterProcess]:
    args = ["--models-dir", str(tool_models), "--models-preset", str(tool_models / "models.ini"),
            "--ctx-size", "1024", "--tools", "get_info,write_file",
            "--tools-root", str(tools_root)]  # fmt: skip
    with running_router(args) as process:
        yield process


def _steer(router: RouterProcess, model: str, key: str = "") -> str:
    """Extra parameters that make every reply of ``model`` one short tool call."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    reply = router.client.post("/tokenize", json={"model": model, "content": '"'}, headers=headers)
    quote = reply.json()["tokens"][-1]
    steer = {"tool_choice": "required", "parallel_tool_calls": False,
             "logit_bias": {str(quote): 100}}  # fmt: skip
    return json.dumps(steer)


def _requests(page: Page, pattern: re.Pattern[str]) -> list[dict[str, Any]]:
    """The JSON bodies of the POSTs the page makes to ``pattern``, as they go out."""
    bodies: list[dict[str, Any]] = []

    def seen(request: Request) -> None:
        if request.method == "POST" and pattern.search(request.url):
            bodies.append(json.loads(request.post_data or "null"))

    page.on("request", seen)
    return bodies


def _choose(page: Page, model: str) -> None:
    picker = page.locator(".picker-button")
    expect(picker).not_to_have_text("")
    picker.click()
    page.get_by_role("option", name=re.compile(rf"^{model}")).click()
    expect(picker).to_contain_text(model)


def test_the_model_calls_a_tool_in_a_loop_until_the_round_limit(
    router: RouterProcess, page: Page, shot: Shot, tools_root: Path
) -> None:
    chats = _requests(page, COMPLETIONS)
    runs = _requests(page, TOOLS)
    open_ui(page, router)
    _choose(page, "reader")
    set_chat_settings(page, extra=_steer(router, "reader"), max_tool_rounds=2, max_tokens=200)
    send_message(page, "Where am I running?")
    replies = page.locator("article.msg-assistant")
    expect(replies).to_have_count(3)
    expect(replies.last.locator(".msg-tool-note")).to_have_text(
        "Stopped at the limit of 2 tool rounds in a row."
    )
    calls = page.locator("details.tool-call")
    expect(calls).to_have_count(3)
    expect(calls.locator(".tool-name")).to_have_text(["get_info"] * 3)
    expect(calls.locator(".tool-state")).to_have_text(["done", "done", "not run"])
    first = calls.first
    expect(first).not_to_have_attribute("open", "")  # collapsed
    expect(first.locator(".tool-result")).to_be_hidden()
    shot("collapsed")
    first.locator("summary").click()
    expect(first.locator(".tool-result")).to_contain_text(json.dumps(str(tools_root)))
    shot("expanded")

    # Only the model's tool set was offered; every result went back as a tool message.
    assert len(chats) == 3
    for body in chats:
        assert [tool["function"]["name"] for tool in body["tools"]] == ["get_info"]
    assert runs == [{"tool": "get_info", "params": {}}] * 2
    last_request = chats[2]["messages"]
    kinds = [message["role"] for message in last_request]
    assert kinds == ["user", "assistant", "tool", "assistant", "tool"]
    assert last_request[1]["tool_calls"][0]["function"]["name"] == "get_info"
    assert last_request[2]["tool_call_id"] == last_request[1]["tool_calls"][0]["id"]
    assert json.loads(last_request[2]["content"])["cwd"] == str(tools_root)
    messages = current_conversation(page)["messages"].values()
    stored = [m for m in messages if m["role"] == "assistant"]
    assert [m["toolCalls"][0]["state"] for m in stored] == ["done", "done", "not-run"]


def test_a_write_tool_waits_for_confirmation_and_a_declined_call_is_not_run(
    router: RouterProcess, page: Page, shot: Shot, tools_root: Path
) -> None:
    chats = _requests(page, COMPLETIONS)
    runs = _requests(page, TOOLS)
    open_ui(page, router)
    _choose(page, "writer")
    set_chat_settings(page, extra=_steer(router, "writer"), max_tokens=200)
    send_message(page, "Save a note.")
    dialog = page.get_by_role("dialog", name="Run write_file?")
    expect(dialog).to_be_visible()
    expect(dialog.locator(".tool-args")).to_contain_text('"path"')
    call = page.locator("details.tool-call")
    expect(call.locator(".tool-state")).to_have_text("waiting for your confirmation")
    shot("confirmation")
    dialog.get_by_role("button", name="Don't run").click()
    expect(call.locator(".tool-state")).to_have_text("declined, not run")
    reply = page.locator("article.msg-assistant")
    expect(reply).to_have_attribute("data-state", "done")
    expect(reply.locator(".msg-tool-note")).to_contain_text("declined")
    shot("declined")
    assert runs == []
    assert len(chats) == 1
    assert [tool["function"]["name"] for tool in chats[0]["tools"]] == ["write_file"]
    assert list(tools_root.iterdir()) == []


def test_without_confirmations_a_write_tool_runs_at_once(
    router: RouterProcess, page: Page, shot: Shot
) -> None:
    runs = _requests(page, TOOLS)
    open_ui(page, router)
    _choose(page, "writer")
    set_chat_settings(page, extra=_steer(router, "writer"), confirm_tools=False,
                      max_tool_rounds=1, max_tokens=200)  # fmt: skip
    send_message(page, "Save a note.")
    calls = page.locator("details.tool-call")
    expect(calls).to_have_count(2)
    expect(page.locator(".msg-tool-note")).to_have_text(
        "Stopped at the limit of 1 tool round in a row."
    )
    expect(page.get_by_role("dialog")).to_have_count(0)
    shot("ran")
    assert len(runs) == 1
    assert runs[0]["tool"] == "write_file"
    assert runs[0]["params"] == {"path": "", "content": ""}
    # It ran: the page shows the router's own answer to that call (a path that is no file).
    answer = router.client.post("/tools", json=runs[0]).json()
    first = calls.first
    expect(first.locator(".tool-state")).to_have_text("failed")
    first.locator("summary").click()
    expect(first.locator(".tool-result")).to_have_text(f"Error: {answer['error']}")
    assert current_conversation(page)["settings"]["confirm_tools"] is False


def test_tools_turned_off_in_the_settings_are_not_offered(
    router: RouterProcess, page: Page
) -> None:
    chats = _requests(page, COMPLETIONS)
    open_ui(page, router)
    _choose(page, "reader")
    set_chat_settings(page, tools=False, max_tokens=4)
    send_message(page, "Hello")
    expect(page.locator("article.msg-assistant")).to_have_attribute("data-state", "done")
    assert len(chats) == 1
    assert "tools" not in chats[0]
    expect(page.locator("details.tool-call")).to_have_count(0)


INFERENCE = "tools-inference-key"


def test_an_inference_key_gets_the_routers_refusal_as_the_write_calls_result(
    tool_models: Path, tools_root: Path, page: Page, shot: Shot
) -> None:
    keys = tools_root.parent / "keys.txt"
    keys.write_text(f"{INFERENCE} inference\n")
    args = ["--models-dir", str(tool_models), "--models-preset", str(tool_models / "models.ini"),
            "--ctx-size", "1024", "--tools", "write_file", "--tools-root", str(tools_root),
            "--api-key-file", str(keys)]  # fmt: skip
    with running_router(args) as router:
        page.add_init_script(f"localStorage.setItem('corral.apiKey', {INFERENCE!r})")
        open_ui(page, router)
        _choose(page, "writer")
        steer = _steer(router, "writer", INFERENCE)
        set_chat_settings(page, extra=steer, confirm_tools=False, max_tool_rounds=1, max_tokens=200)
        send_message(page, "Save a note.")
        call = page.locator("details.tool-call").first
        expect(call.locator(".tool-state")).to_have_text("failed")
        call.locator("summary").click()
        refusal = 'Error: only admin keys may run "write_file"'
        expect(call.locator(".tool-result")).to_have_text(refusal)
        shot("refused")
    assert list(tools_root.iterdir()) == []
