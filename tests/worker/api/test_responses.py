"""OpenAI's Responses API on a real worker, through the real ``openai`` client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses import (
    Response,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseStreamEvent,
)

from tests.support.worker_process import worker

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"enum": ["Paris", "Rome"]}},
        "required": ["city"],
    },
}
SCHEMA = {
    "type": "object",
    "properties": {"color": {"enum": ["red", "green", "blue"]}, "size": {"enum": [1, 2, 3]}},
    "required": ["color", "size"],
    "additionalProperties": False,
}
# With temperature 0 and without prompt reuse, the same request yields the same text.
GREEDY: dict[str, Any] = {"cache_prompt": False, "ignore_eos": True}


class Server:
    def __init__(self, url: str, client: openai.OpenAI) -> None:
        self.url = url
        self.client = client

    def predicted(self) -> int:
        """The worker's own count of generated tokens, from its metrics."""
        text = httpx.get(f"{self.url}/metrics").text
        line = next(x for x in text.splitlines() if x.startswith("llamacpp:tokens_predicted_total"))
        return int(float(line.split()[1]))

    def create(self, **body: Any) -> Response:
        response: Response = self.client.responses.create(model="alpha", **body)
        return response

    def stream(self, **body: Any) -> list[ResponseStreamEvent]:
        events = list(self.client.responses.create(model="alpha", stream=True, **body))
        assert [event.sequence_number for event in events] == list(range(len(events)))
        return events


GENERIC = ("--tool-mode", "generic")


@pytest.fixture(scope="module")
def server(models_dir: Path) -> Iterator[Server]:
    with (
        # The tiny model's template has no tool-call syntax: the tool tests read the generic
        # tool mode's calls (docs/tool-calls.md).
        worker(models_dir / "alpha.gguf", "--ctx-size", "2048", "--metrics", *GENERIC) as child,
        openai.OpenAI(base_url=f"{child.url}/v1", api_key="x", max_retries=0) as client,
    ):
        yield Server(child.url, client)


def test_text_answer_cut_by_the_budget_is_incomplete(server: Server) -> None:
    before = server.predicted()
    response = server.create(input="hi", max_output_tokens=8, extra_body={"ignore_eos": True})
    assert response.id.startswith("resp_")
    assert (response.object, response.model) == ("response", "alpha")
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    [item] = response.output
    assert item.type == "message"
    assert item.role == "assistant"
    assert item.id.startswith("msg_")
    [part] = item.content
    assert part.type == "output_text"
    assert part.text
    assert response.output_text == part.text
    assert response.usage is not None
    assert response.usage.output_tokens == server.predicted() - before == 8
    assert response.usage.total_tokens == response.usage.input_tokens + 8


def test_text_stream_event_order(server: Server) -> None:
    before = server.predicted()
    events = server.stream(input="hi", max_output_tokens=6, extra_body={"ignore_eos": True})
    types = [event.type for event in events]
    deltas = types.count("response.output_text.delta")
    assert deltas >= 1
    assert types == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * deltas,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",  # as llama-server, whatever the status
    ]
    created, added, last = events[0], events[2], events[-1]
    assert created.type == "response.created"
    assert created.response.status == "in_progress"
    assert added.type == "response.output_item.added"
    assert last.type == "response.completed"
    final = last.response
    assert final.id == created.response.id
    assert final.status == "incomplete"
    assert [item.id for item in final.output] == [added.item.id]
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == final.output_text
    assert all(e.item_id == added.item.id for e in events if e.type == "response.output_text.delta")
    assert final.usage is not None
    assert final.usage.output_tokens == server.predicted() - before == 6


def test_stop_completes_the_response(server: Server) -> None:
    text = server.create(
        input="hi", max_output_tokens=40, temperature=0, extra_body=GREEDY
    ).output_text
    words = text.split()
    assert len(words) > 4
    stop = words[3][:3]  # a stop string that starts in the middle of the text
    cut = text[: text.index(stop)]
    stopped: dict[str, Any] = {"temperature": 0, "extra_body": {**GREEDY, "stop": [stop]}}

    before = server.predicted()
    response = server.create(input="hi", max_output_tokens=40, **stopped)
    assert (response.status, response.incomplete_details) == ("completed", None)
    assert response.output_text == cut
    [item] = response.output
    assert item.type == "message"
    assert item.status == "completed"
    assert response.usage is not None
    assert response.usage.output_tokens == server.predicted() - before

    events = server.stream(input="hi", max_output_tokens=40, **stopped)
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == cut
    done = [e for e in events if e.type == "response.output_text.done"]
    assert [e.text for e in done] == [cut]


@pytest.mark.parametrize(
    "choice", ["required", {"type": "function", "name": "get_weather"}], ids=["required", "named"]
)
def test_tool_call_is_a_function_call_item(server: Server, choice: Any) -> None:
    before = server.predicted()
    response = server.create(input="Weather?", tools=[WEATHER], tool_choice=choice,
                             max_output_tokens=200)  # fmt: skip
    assert response.status == "completed"
    [call] = response.output
    assert call.type == "function_call"
    assert call.id is not None
    assert call.id.startswith("fc_")
    assert call.call_id.startswith("call_")
    assert call.name == "get_weather"
    assert json.loads(call.arguments)["city"] in ("Paris", "Rome")
    assert response.output_text == ""
    assert response.usage is not None
    assert response.usage.output_tokens == server.predicted() - before


def test_tool_call_stream(server: Server) -> None:
    events = server.stream(input="Weather?", tools=[WEATHER], tool_choice="required",
                           max_output_tokens=200)  # fmt: skip
    kinds = [event.type for event in events]
    # The arguments stream as they are written (the generic tool mode): several deltas.
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert kinds[-3:] == ["response.function_call_arguments.done", "response.output_item.done",
                          "response.completed"]  # fmt: skip
    assert set(kinds[3:-3]) == {"response.function_call_arguments.delta"}
    assert len(kinds[3:-3]) > 1
    added, arguments, done, completed = events[2], events[-3], events[-2], events[-1]
    deltas = [e for e in events if isinstance(e, ResponseFunctionCallArgumentsDeltaEvent)]
    assert added.type == "response.output_item.added"
    assert added.item.type == "function_call"
    assert arguments.type == "response.function_call_arguments.done"
    assert done.type == "response.output_item.done"
    assert done.item.type == "function_call"
    assert arguments.item_id == added.item.id == done.item.id
    assert json.loads(arguments.arguments)["city"] in ("Paris", "Rome")
    assert done.item.arguments == arguments.arguments
    assert "".join(delta.delta for delta in deltas) == arguments.arguments
    assert completed.type == "response.completed"
    assert completed.response.output == [done.item]


def _history(result: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"type": "input_text", "text": "Weather in Rome?"}]},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather",
         "arguments": '{"city": "Rome"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": result},
    ]  # fmt: skip


def test_tool_results_in_history_reach_the_model(server: Server) -> None:
    tools = {"tools": [WEATHER], "tool_choice": "required"}
    response = server.create(input=_history("sunny"), max_output_tokens=200, **tools)
    assert response.output[0].type == "function_call"
    short = server.create(input=_history("sunny"), max_output_tokens=1, **tools)
    long = server.create(input=_history("sunny, 25 degrees, light wind"), max_output_tokens=1,
                         **tools)  # fmt: skip
    assert short.usage is not None
    assert long.usage is not None
    assert long.usage.input_tokens > short.usage.input_tokens


def test_instructions_are_the_system_message(server: Server) -> None:
    def prompt_size(**body: Any) -> int:
        usage = server.create(max_output_tokens=1, **body).usage
        assert usage is not None
        return usage.input_tokens

    as_instructions = prompt_size(instructions="Be terse.", input="hi")
    developer = [{"role": "developer", "content": "Be terse."}, {"role": "user", "content": "hi"}]
    assert as_instructions == prompt_size(input=developer)
    assert as_instructions > prompt_size(input="hi")


def test_json_schema_text_format(server: Server) -> None:
    response = server.create(
        input="a shirt",
        max_output_tokens=200,
        text={"format": {"type": "json_schema", "name": "shirt", "schema": SCHEMA}},
    )
    assert response.status == "completed"
    value = json.loads(response.output_text)
    assert value["color"] in ("red", "green", "blue")
    assert value["size"] in (1, 2, 3)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "input"),
        ({"input": "hi", "max_output_tokens": 0}, "max_output_tokens"),
        ({"input": [{"type": "reasoning", "summary": []}]}, "input[0].type"),
        ({"input": [{"role": "tool", "content": "x"}]}, "input[0].role"),
        ({"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "x"}]}]},
         "input[0].content[0].type"),
        ({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}, "call_id"),
        ({"input": "hi", "tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"input": "hi", "tools": [WEATHER], "tool_choice": "sometimes"}, "tool_choice"),
        ({"input": "hi", "tools": [WEATHER], "tool_choice": {"type": "function", "name": "nope"}},
         "unknown tool"),
        ({"input": "hi", "text": {"format": {"type": "json_schema"}}}, "text.format.schema"),
        ({"input": "hi", "previous_response_id": "resp_1"}, "previous_response_id"),
    ],
)  # fmt: skip
def test_malformed_requests_are_400_naming_the_field(
    server: Server, body: dict[str, Any], field: str
) -> None:
    response = httpx.post(f"{server.url}/v1/responses", json={"model": "alpha", **body})
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["type"]) == (400, "invalid_request_error")
    assert field in error["message"]


def test_client_sees_errors_as_bad_requests(server: Server) -> None:
    with pytest.raises(openai.BadRequestError, match="previous_response_id"):
        server.create(input="hi", previous_response_id="resp_1")


def test_stream_reports_prompt_progress_and_timings_as_llama_server(server: Server) -> None:
    # llama-server's telemetry on /responses streams: prompt_progress on extra
    # response.in_progress events, timings on every text delta (timings_per_token) and on the
    # last event.
    body = {
        "model": "alpha",
        "input": "This is a test " * 10,
        "max_output_tokens": 4,
        "stream": True,
        "return_progress": True,
        "timings_per_token": True,
        **GREEDY,
    }
    with httpx.stream("POST", f"{server.url}/v1/responses", json=body, timeout=120) as answer:
        events = [json.loads(line[6:]) for line in answer.iter_lines() if line.startswith("data:")]
    progress = [event for event in events if "prompt_progress" in event]
    assert progress
    assert all(event["type"] == "response.in_progress" for event in progress)
    processed = [event["prompt_progress"]["processed"] for event in progress]
    assert processed == sorted(processed)
    assert processed[-1] == progress[0]["prompt_progress"]["total"] > 0
    deltas = [event for event in events if event["type"] == "response.output_text.delta"]
    assert deltas
    assert all("predicted_per_second" in event["timings"] for event in deltas)
    assert "prompt_per_second" in events[-1]["timings"]
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    # Without the two flags, neither appears (the final event keeps its timings).
    plain = {**body, "return_progress": False, "timings_per_token": False}
    with httpx.stream("POST", f"{server.url}/v1/responses", json=plain, timeout=120) as answer:
        quiet = [json.loads(line[6:]) for line in answer.iter_lines() if line.startswith("data:")]
    assert not any("prompt_progress" in event for event in quiet)
    assert not any("timings" in event for event in quiet[:-1])
