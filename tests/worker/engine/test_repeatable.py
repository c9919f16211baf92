"""Temperature 0 repeats exactly on an idle worker, whatever ran before: the same chat request,
with and without ``tools`` (the generic JSON tool mode, ``--tool-mode generic``: SmolLM2's
template has no tool-call syntax), sent 10 times between other requests
(other prompts and lengths, one sharing the tool instructions, so that the slots, the prompt
cache and the KV cells hold other content) gives the same text and the same log-probabilities
10 of 10. With the bundled SmolLM2 and the official ``openai`` client (docs/serving.md,
"Repeatable answers")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletionToolParam

from tests.support.files.bundled_model import bundled_model
from tests.support.worker_process import worker

TOOLS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
QUESTION = "What is the weather like in Paris today?"
# Between two of its sends: other prompts and lengths, short (one micro-batch of a few rows)
# and long (past 64 rows), with tools (the same instructions, another question) and without.
OTHERS = [
    ("Write a haiku about the sea.", False),
    ("Is it raining in Oslo?", True),
    ("Explain why the sky is blue, then tell a story about a fox. " * 6, False),
    ("Hi", False),
    ("Which city should I visit in spring, and what should I pack? " * 4, True),
]


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    with (
        worker(bundled_model(), "--ctx-size", "2048", "--tool-mode", "generic") as process,
        openai.OpenAI(base_url=f"{process.url}/v1", api_key="x", max_retries=0) as client,
    ):
        yield client


def _ask(client: openai.OpenAI, text: str, tools: bool, max_tokens: int) -> tuple[Any, ...]:
    """The answer's text, tool calls and each token's log-probability."""
    reply = client.chat.completions.create(
        model="smol",
        messages=[{"role": "user", "content": text}],
        temperature=0,
        max_tokens=max_tokens,
        logprobs=True,
        tools=TOOLS if tools else openai.omit,
    )
    choice = reply.choices[0]
    # The function called and its arguments; a call's id is new each time.
    calls = [c.model_dump().get("function") for c in choice.message.tool_calls or []]
    logprobs = [t.logprob for t in (choice.logprobs.content or [])] if choice.logprobs else []
    return choice.message.content, calls, logprobs


@pytest.mark.parametrize("tools", [True, False], ids=["tools", "plain"])
def test_temperature_zero_repeats_between_other_requests(
    client: openai.OpenAI, tools: bool
) -> None:
    answers = []
    for i in range(10):
        answers.append(_ask(client, QUESTION, tools, max_tokens=16))
        other, other_tools = OTHERS[i % len(OTHERS)]
        _ask(client, other, other_tools, max_tokens=2 + i)
    first = answers[0]
    differing = [i for i, answer in enumerate(answers) if answer != first]
    assert not differing, (
        f"sends {differing} differ from the first: {answers[differing[0]]} vs {first}"
    )
