"""A sample of the goldens through a real worker: ``/apply-template``, ``/props`` and the
chat path's prompt tokens (BOS exactly once), plus the template flags on the command line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.template_goldens import GoldenCase, golden_cases, golden_template
from tests.support.worker_process import worker

# Date-free templates (the worker prints today's date), with and without {{ bos_token }},
# one that folds the system message into the first user turn, one that thinks.
SAMPLE = ("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", "google-gemma-2-2b-it",
          "Qwen-Qwen3-0.6B")  # fmt: skip
CTX = ("--ctx-size", "8192")  # the tiny vocabulary spells most words letter by letter
GENERIC = "generic"  # gemma 2 again, with --tool-mode generic


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, httpx.Client]]:
    directory = tmp_path_factory.mktemp("templated")
    with (
        worker(write_tiny_gguf(directory / "hermes.gguf",
                               chat_template=golden_template(SAMPLE[0])["source"]), *CTX) as hermes,
        worker(write_tiny_gguf(directory / "gemma.gguf",
                               chat_template=golden_template(SAMPLE[1])["source"]), *CTX) as gemma,
        worker(write_tiny_gguf(directory / "qwen.gguf",
                               chat_template=golden_template(SAMPLE[2])["source"]), *CTX) as qwen,
        worker(directory / "gemma.gguf", *CTX, "--tool-mode", "generic") as generic,
    ):  # fmt: skip
        clients = {
            stem: httpx.Client(base_url=child.url, timeout=60)
            for stem, child in zip((*SAMPLE, GENERIC), (hermes, gemma, qwen, generic), strict=True)
        }
        yield clients
        for client in clients.values():
            client.close()


def _sample() -> list[GoldenCase]:
    return [case for case in golden_cases() if case.template in SAMPLE]


def _generic(case: GoldenCase) -> bool:
    """Tools a template with no tool-call syntax is offered: with --tool-mode generic,
    Corral's generic tool mode tells the model about them in the prompt, where llama-server
    (and Corral by default) renders the template as is."""
    caps = golden_template(case.template)["caps"]
    return "tools" in case.body and not (caps["supports_tools"] or caps["supports_tool_calls"])


@pytest.mark.parametrize("case", _sample(), ids=lambda c: c.id)
def test_apply_template_answers_as_llama_server(
    clients: dict[str, httpx.Client], case: GoldenCase
) -> None:
    response = clients[case.template].post("/apply-template", json=case.body)
    if case.prompt is None:
        assert response.status_code == 400
        assert "cannot apply the chat template" in response.json()["error"]["message"]
    else:
        assert response.status_code == 200
        assert response.json() == {"prompt": case.prompt}


@pytest.mark.parametrize("stem", SAMPLE)
def test_props_report_the_template_s_capabilities(
    clients: dict[str, httpx.Client], stem: str
) -> None:
    props = clients[stem].get("/props").json()
    assert props["chat_template_caps"] == golden_template(stem)["caps"]
    assert (props["bos_token"], props["eos_token"]) == ("<s>", "</s>")  # the tiny vocabulary's
    (listed,) = clients[stem].get("/v1/models").json()["data"]
    assert listed["meta"]["chat_template_caps"] == golden_template(stem)["caps"]


def _tokens(client: httpx.Client, text: str, add_special: bool) -> int:
    body = {"content": text, "add_special": add_special}
    return len(client.post("/tokenize", json=body).json()["tokens"])


def _chat_cases() -> list[GoldenCase]:
    return [
        c for c in _sample() if c.prompt is not None and c.conversation in ("dialogue", "tools")
    ]


@pytest.mark.parametrize("case", _chat_cases(), ids=lambda c: c.id)
def test_the_chat_path_prompt_is_the_template_s_with_one_bos(
    clients: dict[str, httpx.Client], case: GoldenCase
) -> None:
    client = clients[case.template]
    assert case.prompt is not None
    reply = client.post("/v1/chat/completions", json={**case.body, "max_tokens": 1})
    assert reply.status_code == 200
    prompt_tokens = reply.json()["usage"]["prompt_tokens"]
    # The vocabulary adds BOS; the template's own BOS text was cut, so it is there once.
    assert prompt_tokens == _tokens(client, case.prompt, add_special=True)
    assert prompt_tokens == _tokens(client, "<s>" + case.prompt, add_special=False)


@pytest.mark.parametrize("case", [c for c in _sample() if _generic(c)], ids=lambda c: c.id)
def test_apply_template_shows_the_generic_tool_instructions_the_chat_route_renders(
    clients: dict[str, httpx.Client], case: GoldenCase
) -> None:
    client = clients[GENERIC]
    applied = client.post("/apply-template", json=case.body)
    assert applied.status_code == 200
    prompt = applied.json()["prompt"]
    assert "You can call these tools" in prompt
    assert "get_weather" in prompt
    chat = {**case.body, "max_tokens": 1, "verbose": True}
    reply = client.post("/v1/chat/completions", json=chat).json()
    # The chat route's prompt, as its tokens read back: the same text, after the BOS and the
    # space the tiny (SentencePiece) vocabulary puts before the first word.
    assert reply["__verbose"]["prompt"].removeprefix("<s>").removeprefix(" ") == prompt
    assert reply["usage"]["prompt_tokens"] == _tokens(client, prompt, add_special=True)
    required = client.post("/apply-template", json={**case.body, "tool_choice": "required"})
    assert '"response"' not in required.json()["prompt"].split("Tools:")[0]
    # No tools offered: llama-server's prompt, or its refusal (a tool turn gemma cannot render)
    bare = client.post("/apply-template", json={**case.body, "tool_choice": "none"})
    assert bare.json().get("prompt") == case.prompt


def test_enable_thinking_follows_the_request_s_kwargs(clients: dict[str, httpx.Client]) -> None:
    qwen = clients["Qwen-Qwen3-0.6B"]
    messages = [{"role": "user", "content": "hi"}]

    def apply(kwargs: dict[str, object]) -> httpx.Response:
        body = {"messages": messages, "chat_template_kwargs": kwargs}
        return qwen.post("/apply-template", json=body)

    on, off = apply({}).json()["prompt"], apply({"enable_thinking": False}).json()["prompt"]
    assert on.endswith("<|im_start|>assistant\n")
    assert off.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert apply({"enable_thinking": "no"}).status_code == 400


def test_anthropic_thinking_history_reaches_the_template(
    clients: dict[str, httpx.Client],
) -> None:
    # As llama-server: a thinking block becomes reasoning_content, which Qwen3 renders.
    call: dict[str, object] = {"type": "tool_use", "id": "t1", "name": "ls", "input": {"path": "."}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "main.py"}
    tool = {"name": "ls", "input_schema": {"type": "object"}}

    def count(assistant: list[dict[str, object]]) -> int:
        messages = [
            {"role": "user", "content": "Fix the bug"},
            {"role": "assistant", "content": assistant},
            {"role": "user", "content": [result]},
        ]
        body = {"messages": messages, "tools": [tool]}
        response = clients["Qwen-Qwen3-0.6B"].post("/v1/messages/count_tokens", json=body)
        assert response.status_code == 200, response.text
        return int(response.json()["input_tokens"])

    thought: dict[str, object] = {"type": "thinking", "thinking": "Look at the layout first."}
    assert count([thought, call]) > count([call])


def test_template_flags(tmp_path: Path) -> None:
    model = write_tiny_gguf(tmp_path / "m.gguf")
    template = tmp_path / "t.jinja"
    template.write_text("{{ greeting }}:{% for m in messages %}{{ m.content }}{% endfor %}")
    body = {"messages": [{"role": "user", "content": "hi"}]}
    with worker(model, "--chat-template-file", str(template),
                "--chat-template-kwargs", '{"greeting": "hello"}') as child:  # fmt: skip
        prompt = httpx.post(f"{child.url}/apply-template", json=body).json()["prompt"]
        assert prompt == "hello:hi"
    tools = [{"type": "function", "function": {"name": "f"}}]
    with worker(model, "--no-jinja", "--chat-template", "llama3") as child:
        prompt = httpx.post(f"{child.url}/apply-template", json=body).json()["prompt"]
        assert prompt.startswith("<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>")
        # As llama-server: tools need --jinja.
        refused = httpx.post(f"{child.url}/apply-template", json={**body, "tools": tools})
        assert refused.status_code == 400
        assert "tools param requires --jinja flag" in refused.json()["error"]["message"]
    # With --jinja a built-in name renders as it is: the tools do not reach it (nor refuse it).
    with worker(model, "--chat-template", "llama3") as child:
        applied = httpx.post(f"{child.url}/apply-template", json={**body, "tools": tools})
        assert applied.json() == {"prompt": prompt}
    # The generic tool mode describes them in its own system message, whatever the template.
    with worker(
        model, "--no-jinja", "--chat-template", "llama3", "--tool-mode", "generic"
    ) as child:
        applied = httpx.post(f"{child.url}/apply-template", json={**body, "tools": tools})
        assert "You can call these tools" in applied.json()["prompt"]
