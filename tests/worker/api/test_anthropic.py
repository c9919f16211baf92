"""Anthropic's Messages API on a real worker: ``/v1/messages`` and ``/v1/messages/count_tokens``.

No Anthropic client is installed, so the wire format is checked by hand, event by event.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.files.tiny_media import png_bytes
from tests.support.worker_process import worker

HI = [{"role": "user", "content": "hi"}]
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"enum": ["Paris", "Rome"]}},
        "required": ["city"],
    },
}
TOOL_HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Rome?"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Rome"}},
        ],
    },
    {"role": "user",
     "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]},
]  # fmt: skip


GENERIC = ("--tool-mode", "generic")


@pytest.fixture(scope="module")
def client(models_dir: Path) -> Iterator[httpx.Client]:
    with (
        # The tiny model's template has no tool-call syntax: the tool tests read the generic
        # tool mode's calls (docs/tool-calls.md).
        worker(models_dir / "alpha.gguf", "--ctx-size", "2048", "--metrics", *GENERIC) as child,
        httpx.Client(base_url=child.url, timeout=120) as http,
    ):
        yield http


def _predicted(client: httpx.Client) -> int:
    """The worker's own count of generated tokens, from its metrics."""
    text = client.get("/metrics").text
    line = next(x for x in text.splitlines() if x.startswith("llamacpp:tokens_predicted_total"))
    return int(float(line.split()[1]))


def _message(client: httpx.Client, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/messages", json={"model": "alpha", **body})
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


def _stream(client: httpx.Client, **body: Any) -> list[tuple[str, dict[str, Any]]]:
    """The stream's events as (event name, data); every data line must have its name."""
    events: list[tuple[str, dict[str, Any]]] = []
    name: str | None = None
    with client.stream(
        "POST", "/v1/messages", json={"model": "alpha", **body, "stream": True}
    ) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                assert name is not None, f"data without an event name: {line}"
                data = json.loads(line[6:])
                assert data["type"] == name
                events.append((name, data))
                name = None
    return events


def _prompt(usage: dict[str, int]) -> int:
    """The whole prompt, as Anthropic's clients add it up: the cached part is apart."""
    return usage["input_tokens"] + usage["cache_read_input_tokens"]


def _count(client: httpx.Client, **body: Any) -> int:
    response = client.post("/v1/messages/count_tokens", json={"model": "alpha", **body})
    assert response.status_code == 200, response.text
    assert set(response.json()) == {"input_tokens"}
    count: int = response.json()["input_tokens"]
    return count


def test_text_answer(client: httpx.Client) -> None:
    before = _predicted(client)
    reply = _message(client, messages=HI, max_tokens=8, ignore_eos=True)
    assert reply["id"].startswith("msg_")
    assert (reply["type"], reply["role"], reply["model"]) == ("message", "assistant", "alpha")
    [block] = reply["content"]
    assert block["type"] == "text"
    assert block["text"]
    assert (reply["stop_reason"], reply["stop_sequence"]) == ("max_tokens", None)
    assert reply["usage"]["output_tokens"] == _predicted(client) - before == 8
    assert _prompt(reply["usage"]) == _count(client, messages=HI)


def test_text_stream_follows_anthropic_event_order(client: httpx.Client) -> None:
    before = _predicted(client)
    events = _stream(client, messages=HI, max_tokens=6, ignore_eos=True)
    names = [name for name, _ in events]
    deltas = names.count("content_block_delta")
    assert deltas >= 1
    assert names == [
        "message_start",
        "content_block_start",
        *["content_block_delta"] * deltas,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    start = events[0][1]["message"]
    assert start["id"].startswith("msg_")
    assert (start["role"], start["content"], start["stop_reason"]) == ("assistant", [], None)
    assert _prompt(start["usage"]) == _count(client, messages=HI)
    assert events[1][1] == {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    for _, data in events[2 : 2 + deltas]:
        assert data["index"] == 0
        assert data["delta"]["type"] == "text_delta"
    assert events[-3][1] == {"type": "content_block_stop", "index": 0}
    closing = events[-2][1]
    assert closing["delta"] == {"stop_reason": "max_tokens", "stop_sequence": None}
    assert closing["usage"]["output_tokens"] == _predicted(client) - before == 6


def test_stop_sequence_ends_the_message(client: httpx.Client) -> None:
    # Greedy and without prompt reuse, the same request yields the same text.
    greedy = {"messages": HI, "temperature": 0, "cache_prompt": False, "ignore_eos": True}
    text = _message(client, **greedy, max_tokens=40)["content"][0]["text"]
    words = text.split()
    assert len(words) > 4
    stop = words[3][:3]  # a stop sequence that starts in the middle of the text
    cut = text[: text.index(stop)]

    before = _predicted(client)
    reply = _message(client, **greedy, max_tokens=40, stop_sequences=["zzzz", stop])
    assert reply["content"] == [{"type": "text", "text": cut}]
    assert (reply["stop_reason"], reply["stop_sequence"]) == ("stop_sequence", stop)
    assert reply["usage"]["output_tokens"] == _predicted(client) - before

    events = _stream(client, **greedy, max_tokens=40, stop_sequences=[stop])
    streamed = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")
    assert streamed == cut
    assert events[-2][1]["delta"] == {"stop_reason": "stop_sequence", "stop_sequence": stop}


@pytest.mark.parametrize(
    "choice", [{"type": "any"}, {"type": "tool", "name": "get_weather"}], ids=["any", "tool"]
)
def test_tool_call_is_a_tool_use_block(client: httpx.Client, choice: dict[str, Any]) -> None:
    body = {"messages": HI, "tools": [WEATHER], "tool_choice": choice, "max_tokens": 200}
    before = _predicted(client)
    reply = _message(client, **body)
    [block] = reply["content"]
    assert block["type"] == "tool_use"
    assert block["id"].startswith("toolu_")
    assert block["name"] == "get_weather"
    assert block["input"]["city"] in ("Paris", "Rome")
    assert (reply["stop_reason"], reply["stop_sequence"]) == ("tool_use", None)
    assert reply["usage"]["output_tokens"] == _predicted(client) - before
    assert _prompt(reply["usage"]) == _count(client, **body)


def test_tool_call_stream(client: httpx.Client) -> None:
    body = {"messages": HI, "tools": [WEATHER], "tool_choice": {"type": "any"}, "max_tokens": 200}
    events = _stream(client, **body)
    names = [name for name, _ in events]
    # The call streams as it is written (the generic tool mode): its input in several deltas.
    assert names[:2] == ["message_start", "content_block_start"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(names[2:-3]) == {"content_block_delta"}
    assert len(names[2:-3]) > 1
    block = events[1][1]["content_block"]
    assert block["type"] == "tool_use"
    assert block["id"].startswith("toolu_")
    assert (block["name"], block["input"]) == ("get_weather", {})
    deltas = [data["delta"] for _, data in events[2:-3]]
    assert {delta["type"] for delta in deltas} == {"input_json_delta"}
    partial_json = "".join(delta["partial_json"] for delta in deltas)
    assert json.loads(partial_json)["city"] in ("Paris", "Rome")
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_tool_results_in_history_reach_the_model(client: httpx.Client) -> None:
    body = {"tools": [WEATHER], "tool_choice": {"type": "any"}}
    reply = _message(client, messages=TOOL_HISTORY, max_tokens=200, **body)
    assert reply["stop_reason"] == "tool_use"
    # A longer tool result is a longer prompt: the result is rendered, not dropped.
    longer = json.loads(json.dumps(TOOL_HISTORY))
    longer[2]["content"][0]["content"] = [{"type": "text", "text": "sunny, 25 degrees, light wind"}]
    assert _count(client, messages=longer, **body) > _count(client, messages=TOOL_HISTORY, **body)


def test_count_tokens_matches_a_real_request(client: httpx.Client) -> None:
    system_blocks = [{"type": "text", "text": "You are terse."}]
    body = {"system": "You are terse.", "messages": TOOL_HISTORY, "tools": [WEATHER]}
    counted = _count(client, **body)
    assert counted == _count(client, **{**body, "system": system_blocks})
    assert counted > _count(client, **{**body, "system": None})
    reply = _message(client, **body, max_tokens=1)
    assert _prompt(reply["usage"]) == counted


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"max_tokens": 4}, "messages"),
        ({"messages": HI, "max_tokens": 0}, "max_tokens"),
        ({"messages": [{"role": "system", "content": "x"}], "max_tokens": 4}, "messages[0].role"),
        (
            {"messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}],
             "max_tokens": 4},
            "messages[0].content[0].type",
        ),
        ({"messages": [{**TOOL_HISTORY[1], "role": "user"}], "max_tokens": 4},
         "messages[0].content[1]"),
        ({"messages": [{**TOOL_HISTORY[2], "role": "assistant"}], "max_tokens": 4},
         "messages[0].content[0]"),
        ({"messages": HI, "system": [{"type": "image"}], "max_tokens": 4}, "system"),
        ({"messages": HI, "tools": [{"name": "x"}], "max_tokens": 4}, "input_schema"),
        ({"messages": HI, "tools": [{**WEATHER, "type": "web_search_20250305"}], "max_tokens": 4},
         "tools[0].type"),
        ({"messages": HI, "tools": [WEATHER], "tool_choice": {"type": "tool"}, "max_tokens": 4},
         "name"),
        ({"messages": HI, "tools": [WEATHER], "tool_choice": {"type": "tool", "name": "nope"},
          "max_tokens": 4}, "unknown tool"),
        ({"messages": HI, "temperature": "hot", "max_tokens": 4}, "temperature"),
    ],
)  # fmt: skip
def test_malformed_requests_are_400_naming_the_field(
    client: httpx.Client, body: dict[str, Any], field: str
) -> None:
    response = client.post("/v1/messages", json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["type"]) == (400, "invalid_request_error")
    assert field in error["message"]


def test_no_messages_are_answered_as_llama_server(client: httpx.Client) -> None:
    # llama-server is permissive here: the template's empty conversation is the prompt.
    body = _message(client, messages=[], max_tokens=2)
    assert (body["type"], body["role"]) == ("message", "assistant")


def test_an_image_in_a_tool_result_reaches_the_media_check(client: httpx.Client) -> None:
    # The image is read, not dropped: this text-only model refuses it, naming the part.
    png = base64.b64encode(png_bytes()).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1",
              "content": [{"type": "text", "text": "File: a.png"}, image]}  # fmt: skip
    messages = [*TOOL_HISTORY[:2], {"role": "user", "content": [result]}]
    response = client.post("/v1/messages", json={"max_tokens": 4, "messages": messages})
    assert response.status_code == 400
    assert "image input is not supported" in response.json()["error"]["message"]


def test_thinking_history_and_the_thinking_parameter_are_accepted(client: httpx.Client) -> None:
    history = [
        TOOL_HISTORY[0],
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "Check it."},
                                          *TOOL_HISTORY[1]["content"]]},
        TOOL_HISTORY[2],
    ]  # fmt: skip
    thinking = {"type": "enabled", "budget_tokens": 50}
    body = _message(client, messages=history, max_tokens=2, thinking=thinking)
    assert body["type"] == "message"
    counted = client.post("/v1/messages/count_tokens", json={"messages": history})
    assert counted.status_code == 200, counted.text


def test_count_tokens_rejects_malformed_requests(client: httpx.Client) -> None:
    bad_role = client.post("/v1/messages/count_tokens", json={"messages": [{"role": "bot"}]})
    assert bad_role.status_code == 400
    assert "messages[0]" in bad_role.json()["error"]["message"]
    not_json = client.post("/v1/messages/count_tokens", content=b"{")
    assert not_json.status_code == 400
    assert "invalid JSON" in not_json.json()["error"]["message"]
