"""A Responses stream through the router carries llama-server's telemetry and ends as
llama-server ends it (``test_responses_stream_with_llama_telemetry`` of its tests): progress on
``response.in_progress`` events, timings on text deltas and on the last event, and
``response.completed`` last even when the token budget cut the answer."""

from __future__ import annotations

import json
from typing import Any

import openai

from tests.support.router_process import RouterProcess

BODY: dict[str, Any] = {
    "model": "alpha",
    "input": "This is a test " * 10,
    "max_output_tokens": 4,
    "ignore_eos": True,
}


def test_telemetry_and_the_terminal_event_reach_the_client(router: RouterProcess) -> None:
    body = {**BODY, "stream": True, "return_progress": True, "timings_per_token": True}
    with router.client.stream("POST", "/v1/responses", json=body, timeout=120) as answer:
        events = [json.loads(line[6:]) for line in answer.iter_lines() if line.startswith("data:")]
    progress = [event for event in events if "prompt_progress" in event]
    assert progress
    assert {event["type"] for event in progress} == {"response.in_progress"}
    assert all(e["prompt_progress"]["processed"] >= e["prompt_progress"]["cache"] for e in progress)
    deltas = [event for event in events if event["type"] == "response.output_text.delta"]
    assert deltas
    assert all("predicted_per_second" in event["timings"] for event in deltas)
    last = events[-1]
    assert last["type"] == "response.completed"
    assert "prompt_per_second" in last["timings"]
    assert last["response"]["usage"]["output_tokens"] == 4
    # The budget cut it: the response says so, as OpenAI's does.
    assert last["response"]["status"] == "incomplete"
    assert last["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def test_the_openai_stream_helper_gets_its_final_response(router: RouterProcess) -> None:
    extra = {"ignore_eos": BODY["ignore_eos"]}
    with (
        openai.OpenAI(base_url=f"{router.url}/v1", api_key="x", max_retries=0) as client,
        client.responses.stream(
            model="alpha", input=BODY["input"], max_output_tokens=4, extra_body=extra
        ) as stream,
    ):
        final = stream.get_final_response()  # raises unless response.completed came
    assert final.status == "incomplete"
    assert final.output_text
