"""Tool calls of the families with grammars of their own, on a real worker with the family's
real template (from llama.cpp's ``models/templates``), through the official ``openai`` client.

A random model writes no call of its own accord: ``logit_bias`` on the family's opening token
makes it start one, and from that trigger on the lazy grammar makes the rest a valid call to
one of the request's tools, which the worker reads back in the family's syntax.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.worker_process import worker

GOLDENS = Path(__file__).parents[1] / "template_goldens"
SEARCH: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "brave_search",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "enum": ["Oslo weather"]}},
            "required": ["query"],
        },
    },
}
# LFM2's grammar takes any string for a string parameter (as llama.cpp's), where the bias
# would keep writing the opener: a call without parameters leaves it no room.
NOW: dict[str, Any] = {
    "type": "function",
    "function": {"name": "now", "parameters": {"type": "object"}},
}
# template, the token that opens a call, the special tokens the template writes
FAMILIES = {
    "LFM2": ("LFM2-8B-A1B", "<|tool_call_start|>",
             ("<|tool_call_start|>", "<|tool_call_end|>")),
    "Llama 3.1": ("meta-llama-Llama-3.1-8B-Instruct", "<|python_tag|>",
                  ("<|python_tag|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>")),
}  # fmt: skip


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, openai.OpenAI, dict[str, int]]]:
    template, opener, tokens = FAMILIES[request.param]
    source = json.loads((GOLDENS / f"{template}.json").read_text())["source"]
    path = tmp_path_factory.mktemp("family") / "family.gguf"
    write_tiny_gguf(path, name="family", chat_template=source, user_tokens=tokens)
    with worker(path, "--ctx-size", "2048") as child:
        (token,) = httpx.post(f"{child.url}/tokenize", json={"content": opener}).json()["tokens"][
            -1:
        ]
        with openai.OpenAI(base_url=f"{child.url}/v1", api_key="x", max_retries=0) as client:
            yield request.param, client, {str(token): 100}


def test_a_triggered_call_is_held_to_the_tools(family: Any) -> None:
    name, client, open_call = family
    tools = [SEARCH] if name == "Llama 3.1" else [NOW]
    reply = client.chat.completions.create(
        model="family", messages=[{"role": "user", "content": "Weather in Oslo?"}],
        tools=tools, tool_choice="auto", parallel_tool_calls=False, logit_bias=open_call,
        temperature=0, max_tokens=80,
    )  # fmt: skip
    choice = reply.choices[0]
    assert choice.message.tool_calls, choice.message
    (call,) = choice.message.tool_calls
    expected = tools[0]["function"]
    assert call.function.name == expected["name"]
    properties = expected["parameters"].get("properties", {})
    assert json.loads(call.function.arguments) == {k: "Oslo weather" for k in properties}
    assert choice.finish_reason == "tool_calls"
