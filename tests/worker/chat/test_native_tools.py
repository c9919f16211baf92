"""Native tool calls and reasoning on a real worker, through the official ``openai`` client.

The tiny model speaks Hermes: its template writes ``<tool_call>`` JSON, so the worker parses
that syntax back out of the output. A random model writes no tool call of its own accord, so a
request steers it: ``logit_bias`` on the ``<tool_call>`` token makes it open one, after which
the lazy tool grammar writes a valid call; a request grammar writes the thinking and the answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.files.hermes_model import HERMES_TEMPLATE, USER_TOKENS
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.worker_process import worker
from tests.worker.chat.weather_tool import ASK, PARAMETERS, WEATHER

ANSWER = "It is sunny in Oslo."
GREEDY: dict[str, Any] = {"temperature": 0, "max_tokens": 120}


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hermes") / "hermes.gguf"
    return write_tiny_gguf(path, name="hermes", chat_template=HERMES_TEMPLATE,
                           user_tokens=USER_TOKENS)  # fmt: skip


@pytest.fixture(scope="module")
def open_call(server: str) -> dict[str, int]:
    """A logit bias that makes the model write ``<tool_call>`` first (a token of its own)."""
    tokens = httpx.post(f"{server}/tokenize", json={"content": "<tool_call>"}).json()["tokens"]
    (token,) = tokens[-1:]
    return {str(token): 100}


def _call_turn(client: Any, open_call: dict[str, int], stream: bool) -> Any:
    return client.chat.completions.create(
        model="hermes", messages=ASK, tools=[WEATHER], tool_choice="auto",
        parallel_tool_calls=False, logit_bias=open_call, stream=stream, **GREEDY,
    )  # fmt: skip


def _answer_turn(client: Any, call: dict[str, Any], stream: bool) -> Any:
    history = [
        *ASK,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": "sunny"},
    ]
    return client.chat.completions.create(
        model="hermes", messages=history, tools=[WEATHER], tool_choice="none",
        extra_body={"grammar": f'root ::= "{ANSWER}"'}, stream=stream, **GREEDY,
    )  # fmt: skip


def test_a_tool_loop_call_result_answer(client: Any, open_call: dict[str, int]) -> None:
    first = _call_turn(client, open_call, stream=False)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.id.startswith("call_")
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments)["city"] in ("Oslo", "Lima")
    second = _answer_turn(client, call.model_dump(), stream=False)
    assert second.choices[0].message.content == ANSWER
    assert second.choices[0].message.tool_calls is None
    assert second.choices[0].finish_reason == "stop"


def test_a_streamed_tool_loop(client: Any, open_call: dict[str, int]) -> None:
    whole = _call_turn(client, open_call, stream=False).choices[0].message.tool_calls[0]
    chunks = list(_call_turn(client, open_call, stream=True))
    pieces = [c for chunk in chunks for c in (chunk.choices[0].delta.tool_calls or [])]
    first = pieces[0]
    assert (first.index, first.type, first.function.name) == (0, "function", "get_weather")
    assert first.id.startswith("call_")
    assert all(p.index == 0 and p.id is None and p.function.name is None for p in pieces[1:])
    arguments = "".join(p.function.arguments or "" for p in pieces)
    assert arguments == whole.function.arguments  # same greedy call, streamed in pieces
    assert len(pieces) > 2
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    call = {"id": first.id, "type": "function",
            "function": {"name": "get_weather", "arguments": arguments}}  # fmt: skip
    answer = list(_answer_turn(client, call, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in answer) == ANSWER


def test_without_the_trigger_the_model_answers_in_text(client: Any) -> None:
    reply = client.chat.completions.create(
        model="hermes", messages=ASK, tools=[WEATHER], tool_choice="auto",
        extra_body={"n_predict": 12, "ignore_eos": True}, temperature=0,
    )  # fmt: skip
    choice = reply.choices[0]
    assert (choice.finish_reason, choice.message.tool_calls) == ("length", None)
    assert choice.message.content


def test_required_constrains_from_the_first_token(client: Any) -> None:
    reply = client.chat.completions.create(
        model="hermes", messages=ASK, tools=[WEATHER], tool_choice="required",
        parallel_tool_calls=False, **GREEDY,
    )  # fmt: skip
    (call,) = reply.choices[0].message.tool_calls
    assert call.function.name == "get_weather"
    assert reply.choices[0].finish_reason == "tool_calls"


def test_a_bad_reasoning_format_is_a_400(client: Any) -> None:
    with pytest.raises(openai.BadRequestError, match="reasoning_format must be one of"):
        client.chat.completions.create(
            model="hermes", messages=ASK, extra_body={"reasoning_format": "sometimes"}
        )


def test_anthropic_tool_use_from_the_same_parse(server: str, open_call: dict[str, int]) -> None:
    body = {
        "model": "hermes",
        "max_tokens": 120,
        "messages": ASK,
        "tools": [{"name": "get_weather", "input_schema": PARAMETERS}],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
        "temperature": 0,
        "logit_bias": open_call,
    }
    reply = httpx.post(f"{server}/v1/messages", json=body, timeout=60).json()
    (block,) = reply["content"]
    assert (block["type"], block["name"]) == ("tool_use", "get_weather")
    assert block["input"]["city"] in ("Oslo", "Lima")
    assert reply["stop_reason"] == "tool_use"


def test_responses_function_call_from_the_same_parse(
    client: Any, open_call: dict[str, int]
) -> None:
    tool = {"type": "function", "name": "get_weather",
            "parameters": PARAMETERS}  # fmt: skip
    events: list[Any] = list(client.responses.create(
        model="hermes", input="Weather in Oslo?", tools=[tool], stream=True,
        temperature=0, parallel_tool_calls=False, extra_body={"logit_bias": open_call},
    ))  # fmt: skip
    kinds = [e.type for e in events]
    assert "response.function_call_arguments.delta" in kinds
    final: Any = events[-1]
    (item,) = final.response.output
    assert (item.type, item.name) == ("function_call", "get_weather")
    assert json.loads(item.arguments)["city"] in ("Oslo", "Lima")


# As Qwen 3 and DeepSeek R1 do with thinking on: the prompt opens the thinking.
OPENS_THINKING = HERMES_TEMPLATE.replace(
    "'<|im_start|>assistant\\n' -}}{%- endif -%}",
    "'<|im_start|>assistant\\n<think>\\n' -}}{%- endif -%}",
)


@pytest.fixture(scope="module")
def thinker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai.OpenAI]:
    path = tmp_path_factory.mktemp("thinker") / "thinker.gguf"
    write_tiny_gguf(path, name="thinker", chat_template=OPENS_THINKING, user_tokens=USER_TOKENS)
    with (
        worker(path, "--ctx-size", "1024") as child,
        openai.OpenAI(base_url=f"{child.url}/v1", api_key="x", max_retries=0) as client,
    ):
        yield client


def _think(client: Any, **extra: Any) -> Any:
    reply = client.chat.completions.create(
        model="thinker", messages=ASK, temperature=0, max_tokens=8,
        extra_body={"ignore_eos": True, **extra},
    )  # fmt: skip
    assert reply.usage.completion_tokens == 8
    return reply.choices[0].message


def test_the_answer_starts_inside_the_thinking_the_prompt_opened(thinker: Any) -> None:
    message = _think(thinker)  # a random model never writes </think> itself
    assert message.reasoning_content
    assert not message.content


def test_a_reasoning_budget_forces_the_end_of_the_thinking(thinker: Any) -> None:
    unlimited = _think(thinker).reasoning_content
    three = _think(thinker, reasoning_budget_tokens=3)
    assert three.reasoning_content  # three tokens of thinking, then </think> was forced
    assert unlimited.startswith(three.reasoning_content)
    assert len(three.reasoning_content) < len(unlimited)
    assert three.content  # and the rest of the tokens went to the answer
    none = _think(thinker, reasoning_budget_tokens=0)
    assert (getattr(none, "reasoning_content", None), bool(none.content)) == (None, True)


def test_required_lets_a_thinking_model_close_its_thoughts_first(thinker: Any) -> None:
    # The prompt opened the thinking: the eager grammar must allow </think> before the call,
    # which the bias then makes the model write at once.
    url = str(thinker.base_url).removesuffix("/v1/")
    (end,) = httpx.post(f"{url}/tokenize", json={"content": "</think>"}).json()["tokens"][-1:]
    reply = thinker.chat.completions.create(
        model="thinker", messages=ASK, tools=[WEATHER], tool_choice="required",
        parallel_tool_calls=False, logit_bias={str(end): 100}, temperature=0, max_tokens=120,
    )  # fmt: skip
    message = reply.choices[0].message
    (call,) = message.tool_calls
    assert call.function.name == "get_weather"
    assert reply.choices[0].finish_reason == "tool_calls"


def test_reasoning_content_whole_and_streamed(thinker: Any) -> None:
    # The prompt opened the thinking; a request grammar writes the thought and the answer.
    grammar = f'root ::= "Sunny, no tool needed." "</think>" "{ANSWER}"'
    body: dict[str, Any] = {"model": "thinker", "messages": ASK,
                            "extra_body": {"grammar": grammar}, **GREEDY}  # fmt: skip
    message: Any = thinker.chat.completions.create(**body).choices[0].message
    assert (message.content, message.reasoning_content) == (ANSWER, "Sunny, no tool needed.")
    chunks = list(thinker.chat.completions.create(stream=True, **body))
    deltas: list[Any] = [c.choices[0].delta for c in chunks]
    assert "".join(getattr(d, "reasoning_content", None) or "" for d in deltas) == (
        "Sunny, no tool needed."
    )
    assert "".join(d.content or "" for d in deltas) == ANSWER
    none = thinker.chat.completions.create(
        **{**body, "extra_body": {"grammar": grammar, "reasoning_format": "none"}}
    )
    assert none.choices[0].message.content == f"Sunny, no tool needed.</think>{ANSWER}"


def test_the_budget_message_is_forced_before_the_end_tag(thinker: Any) -> None:
    reply = thinker.chat.completions.create(
        model="thinker", messages=ASK, temperature=0, max_tokens=24,
        extra_body={"ignore_eos": True, "reasoning_budget_tokens": 2,
                    "reasoning_budget_message": " Enough."},
    )  # fmt: skip
    message = reply.choices[0].message
    plain = _think(thinker, reasoning_budget_tokens=2).reasoning_content
    # the two thinking tokens (the split trims the thinking's edges), then the message
    assert message.reasoning_content.startswith(plain)
    assert message.reasoning_content.endswith(" Enough.")
    assert message.content
