"""Anthropic's usage counts through ``corral serve``, read by the official ``anthropic`` SDK:
a repeated prompt's counts add up to the prompt, whole answers and streams alike.

By Anthropic's rule the prompt is ``input_tokens + cache_read_input_tokens +
cache_creation_input_tokens`` (gateways such as litellm budget and bill by that sum);
llama-server counts ``input_tokens`` as the prompt less its cached part (docs/api.md).
"""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import pytest
from anthropic.types import MessageParam, Usage

from tests.support.router_process import RouterProcess

MESSAGES: list[MessageParam] = [{"role": "user", "content": "Count the sheep in the meadow."}]


@pytest.fixture(scope="module")
def client(shared_router: RouterProcess) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=shared_router.url, api_key="unused", max_retries=0) as sdk:
        yield sdk


def _prompt(usage: Usage) -> int:
    """The prompt's length as Anthropic's clients add it up."""
    parts = (usage.input_tokens, usage.cache_read_input_tokens, usage.cache_creation_input_tokens)
    return sum(part or 0 for part in parts)


def _counted(client: anthropic.Anthropic) -> int:
    return client.messages.count_tokens(model="alpha", messages=MESSAGES).input_tokens


def test_a_repeated_prompt_s_whole_answer_counts_it_once(client: anthropic.Anthropic) -> None:
    client.messages.create(model="alpha", max_tokens=2, messages=MESSAGES)
    again = client.messages.create(model="alpha", max_tokens=2, messages=MESSAGES)
    assert again.usage.cache_read_input_tokens  # the prompt cache held it
    assert _prompt(again.usage) == _counted(client)


def test_a_repeated_prompt_s_stream_counts_it_once(client: anthropic.Anthropic) -> None:
    client.messages.create(model="alpha", max_tokens=2, messages=MESSAGES)
    with client.messages.stream(model="alpha", max_tokens=2, messages=MESSAGES) as stream:
        events = list(stream)
        final = stream.get_final_message()
    # The opening event already splits the prompt, as llama-server's does.
    opening = next(event for event in events if event.type == "message_start")
    assert opening.message.usage.cache_read_input_tokens
    assert _prompt(opening.message.usage) == _counted(client)
    # The SDK takes the message_delta's totals over: its final message adds up the same.
    assert _prompt(final.usage) == _counted(client)
    assert final.usage.output_tokens == 2
