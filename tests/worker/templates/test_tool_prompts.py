"""Tools as llama-server hands them over (docs/templates.md, issue 53 item 1): a template that
writes tool calls but does not describe tools (DeepSeek V3.1, R1 distills, firefunction v2), and
one with no tool-call syntax at all, get llama-server's prompt, the template's own, on every
chat route, without the generic tool mode's instructions, which only --tool-mode generic adds."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import ollama
import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.router_process import running_router
from tests.support.template_goldens import (
    GoldenCase,
    golden_cases,
    golden_template,
    recorded_at,
)
from tests.support.worker_process import worker
from worker.chat.pipeline import template_tools
from worker.templates import ChatTemplates, TemplateChoice, TemplateRenderError, VocabTokens

STEM = "deepseek-ai-DeepSeek-V3.1"  # date-free; caps: tool calls, no tool descriptions
CASES = [c for c in golden_cases() if c.template == STEM and c.conversation == "tools"]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = golden_template(STEM)["source"]
    return write_tiny_gguf(tmp_path_factory.mktemp("v31") / "v31.gguf", chat_template=source)


@pytest.fixture(scope="module")
def client(model: Path) -> Iterator[httpx.Client]:
    with (
        worker(model, "--ctx-size", "8192") as child,
        httpx.Client(base_url=child.url, timeout=120) as http,
    ):
        yield http


def test_the_template_only_writes_tool_calls() -> None:
    caps = golden_template(STEM)["caps"]
    assert caps["supports_tool_calls"]
    assert not caps["supports_tools"]


def _count(client: httpx.Client, prompt: str) -> int:
    body = {"content": prompt, "add_special": True}
    return len(client.post("/tokenize", json=body).json()["tokens"])


@pytest.mark.parametrize("conversation", ["tools", "tool_result"])
def test_apply_template_is_llama_server_s(client: httpx.Client, conversation: str) -> None:
    (case,) = [c for c in golden_cases() if c.template == STEM and c.conversation == conversation]
    response = client.post("/apply-template", json=case.body)
    assert response.status_code == 200
    assert response.json() == {"prompt": case.prompt}


def _anthropic(body: dict[str, Any]) -> dict[str, Any]:
    system, *messages = body["messages"]
    tools = [
        {"name": f["name"], "description": f["description"], "input_schema": f["parameters"]}
        for f in (t["function"] for t in body["tools"])
    ]
    return {"system": system["content"], "messages": messages, "tools": tools}


def _responses(body: dict[str, Any]) -> dict[str, Any]:
    tools = [{"type": "function", **t["function"]} for t in body["tools"]]
    return {"input": body["messages"], "tools": tools, "max_output_tokens": 1}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_chat_route_sends_llama_server_s_prompt(
    client: httpx.Client, case: GoldenCase
) -> None:
    assert case.prompt is not None
    tokens = _count(client, case.prompt)
    chat = {**copy.deepcopy(case.body), "max_tokens": 1, "verbose": True}
    reply = client.post("/v1/chat/completions", json=chat).json()
    # The prompt the worker built, read back from its tokens: after the BOS and the space the
    # tiny (SentencePiece) vocabulary puts before the first word, its word marks read as spaces.
    built = reply["__verbose"]["prompt"].removeprefix("<s>").removeprefix(" ")
    assert built == case.prompt.replace("\u2581", " ")
    assert reply["usage"]["prompt_tokens"] == tokens
    counted = client.post("/v1/messages/count_tokens", json=_anthropic(case.body))
    assert counted.json()["input_tokens"] == tokens
    answered = client.post("/v1/responses", json=_responses(case.body))
    assert answered.json()["usage"]["input_tokens"] == tokens


def test_every_golden_tool_prompt_is_llama_server_s() -> None:
    """Through the chat pipeline's own planning, every template renders the tools
    conversations as llama-server did: one with no tool-call syntax at all too, as is, without
    the generic tool mode's instructions, which only --tool-mode generic adds."""
    vocab = VocabTokens(bos_token="<s>", eos_token="</s>", add_bos=True, add_eos=False)
    differing, refused = [], []
    when = recorded_at()
    for case in golden_cases():
        if case.conversation not in ("tools", "tool_result"):
            continue
        source = golden_template(case.template)["source"]
        templates = ChatTemplates(TemplateChoice(gguf_default=source), vocab, now=lambda: when)
        plan, tools = template_tools(templates, case.body["messages"], case.body["tools"])
        try:
            prompt = templates.render(templates.request(plan.messages, tools, None))
        except TemplateRenderError:
            refused.append(case.id)
            continue
        if prompt != case.prompt:
            differing.append(case.id)
    assert differing == []
    # What llama-server refuses is refused: gemma 2's tool result too (its roles alternate).
    assert "google-gemma-2-2b-it:tool_result" in refused
    tool_cases = [c for c in golden_cases() if c.conversation in ("tools", "tool_result")]
    assert refused == [c.id for c in tool_cases if c.prompt is None]


def test_the_generic_tool_mode_is_an_opt_in() -> None:
    """--tool-mode generic still describes the tools in Corral's words, with its grammar."""
    (case,) = [c for c in golden_cases() if c.id == "google-gemma-2-2b-it:tools"]
    source = golden_template(case.template)["source"]
    vocab = VocabTokens(bos_token="<s>", eos_token="</s>", add_bos=True, add_eos=False)
    templates = ChatTemplates(TemplateChoice(gguf_default=source), vocab)
    args = (templates, case.body["messages"], case.body["tools"])
    plain, _ = template_tools(*args)
    generic, tools = template_tools(*args, tool_mode="generic")
    assert (plain.generic, plain.grammar) == (False, None)
    assert generic.generic
    assert generic.grammar is not None
    assert tools is None


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_ollama_s_chat_through_the_router_sends_it_too(
    client: httpx.Client, model: Path, case: GoldenCase
) -> None:
    assert case.prompt is not None
    args = ["--models-dir", str(model.parent), "--ctx-size", "8192"]
    with running_router(args) as router, ollama.Client(host=router.url, timeout=120) as official:
        body = copy.deepcopy(case.body)
        answer = official.chat(
            model="v31", messages=body["messages"], tools=body["tools"], options={"num_predict": 1}
        )
    assert answer.prompt_eval_count == _count(client, case.prompt)
