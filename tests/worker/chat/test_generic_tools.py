"""Corral's generic JSON tool mode on a real worker, through the official ``openai`` client.

The tiny model's ChatML template has no tool-call syntax, so with ``--tool-mode generic`` a
request with ``tools`` gets the generic mode (without it, llama-server's plain answer): the
grammar makes the model answer ``{"response": …}`` or ``{"tool_call": …}``.
A stream gives that answer as llama-server's generic format does, as it is written: the
response's text as content deltas, a call's name then its argument text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.worker.chat.weather_tool import ASK, WEATHER

CLOCK = {"type": "function", "function": {"name": "clock", "description": "The time now"}}
SEEDED: dict[str, Any] = {"seed": 7, "temperature": 0.8, "max_tokens": 120}


@pytest.fixture(scope="module")
def worker_args() -> tuple[str, ...]:
    return ("--tool-mode", "generic")


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_gguf(tmp_path_factory.mktemp("generic") / "generic.gguf", name="generic")


def _ask(client: Any, stream: bool, **fields: Any) -> Any:
    body = {"model": "generic", "messages": ASK, "tools": [WEATHER], **SEEDED, **fields}
    return client.chat.completions.create(stream=stream, **body)


def _response_seed(client: Any) -> int:
    """A seed at which the model answers in text rather than calling the tool (the random
    model mostly calls it)."""
    for seed in range(80):
        if _ask(client, False, seed=seed).choices[0].message.content:
            return seed
    pytest.fail("the model never answered in text")


def test_a_text_reply_streams_as_content(client: Any) -> None:
    seed = _response_seed(client)
    whole = _ask(client, False, seed=seed).choices[0]
    chunks = list(_ask(client, True, seed=seed))
    pieces = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    assert len(pieces) > 1  # as it is written, not all at once at the end
    assert "".join(pieces) == whole.message.content
    assert not whole.message.content.lstrip().startswith("{")  # the text, not the JSON
    assert chunks[-1].choices[0].finish_reason == whole.finish_reason


def test_a_call_streams_its_name_then_its_arguments(client: Any) -> None:
    whole = _ask(client, False, tool_choice="required").choices[0]
    (call,) = whole.message.tool_calls
    chunks = list(_ask(client, True, tool_choice="required"))
    pieces = [c for chunk in chunks for c in (chunk.choices[0].delta.tool_calls or [])]
    first = pieces[0]
    assert (first.index, first.function.name) == (0, "get_weather")
    assert first.id.startswith("call_")
    assert all(p.id is None and p.function.name is None for p in pieces[1:])
    assert len(pieces) > 2
    arguments = "".join(p.function.arguments or "" for p in pieces)
    assert arguments == call.function.arguments
    assert json.loads(arguments)["city"] in ("Oslo", "Lima")
    assert not any(chunk.choices[0].delta.content for chunk in chunks)
    assert (whole.finish_reason, chunks[-1].choices[0].finish_reason) == ("tool_calls",) * 2


@pytest.mark.parametrize("stream", [False, True])
def test_a_call_cut_by_max_tokens_is_a_partial_call(client: Any, stream: bool) -> None:
    # As llama-server: an answer that did not end at EOS is read as a stream's prefix, so the
    # client gets the call so far with finish_reason length, never the raw JSON as content.
    whole = _ask(client, False, tool_choice="required")
    (call,) = whole.choices[0].message.tool_calls
    # A few tokens short of the end: inside the arguments (each letter is a token here).
    fields = {"tool_choice": "required", "max_tokens": whole.usage.completion_tokens - 5}
    if stream:
        chunks = list(_ask(client, True, **fields))
        pieces = [c for chunk in chunks for c in (chunk.choices[0].delta.tool_calls or [])]
        content = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
        name, finish = pieces[0].function.name, chunks[-1].choices[0].finish_reason
        arguments = "".join(p.function.arguments or "" for p in pieces)
    else:
        choice = _ask(client, False, **fields).choices[0]
        content, finish = choice.message.content or "", choice.finish_reason
        (cut,) = choice.message.tool_calls
        name, arguments = cut.function.name, cut.function.arguments
    assert (name, content, finish) == ("get_weather", "", "length")
    assert arguments.startswith("{")
    assert call.function.arguments.startswith(arguments)


def test_a_tool_without_parameters_is_called_with_none(client: Any, server: str) -> None:
    # OpenAI reads a missing ``parameters`` as no parameters: the grammar allows only {}.
    # Pushed to open a key (any object let it write {"": ""}), the model still cannot.
    (quote,) = httpx.post(f"{server}/tokenize", json={"content": '"'}).json()["tokens"][-1:]
    for seed in (1, 2, 3):
        reply = _ask(client, False, tools=[CLOCK], tool_choice="required", seed=seed,
                     logit_bias={str(quote): 100})  # fmt: skip
        (call,) = reply.choices[0].message.tool_calls
        assert (call.function.name, call.function.arguments) == ("clock", "{}")
