"""Continuous batching, observed through a real worker (docs/protocol.md §6).

Assertions are about the order in which things happen, never about time, and batched output
is never compared byte for byte with unbatched output (batched kernels round differently).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.worker_process import WorkerProcess, worker
from worker.engine.batching import BatchEngine
from worker.engine.generation import Generation
from worker.sampling.params import SamplingParams

CHAT = [{"role": "user", "content": "hi"}]


class Timeline:
    """What happened, in the order it was seen, across threads."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)

    def note(self, who: str, what: str) -> None:
        with self._changed:
            self.events.append((who, what))
            self._changed.notify_all()

    def wait_for(self, who: str, what: str) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: (who, what) in self.events, timeout=120)

    def index(self, who: str, what: str) -> int:
        return self.events.index((who, what))


def _stream(url: str, who: str, timeline: Timeline, max_tokens: int) -> threading.Thread:
    def run() -> None:
        # ignore_eos: the random tiny model may sample its end token at any time.
        body = {"messages": CHAT, "max_tokens": max_tokens, "stream": True, "ignore_eos": True}
        try:
            with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=120) as r:
                first = True
                for line in r.iter_lines():
                    if not line.startswith("data: {"):
                        continue
                    choice = json.loads(line[6:])["choices"][0]
                    if choice["delta"].get("content") and first:
                        timeline.note(who, "token")
                        first = False
                    if choice["finish_reason"]:
                        timeline.note(who, "done")
        except httpx.HTTPError:  # the test ended and its worker with it
            timeline.note(who, "cut off")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.fixture(scope="module")
def plain(models_dir: Path) -> Iterator[WorkerProcess]:
    """One worker with the default flags for the module's tests that only ask it something:
    none depends on what another asked before."""
    with worker(models_dir / "alpha.gguf") as child:
        yield child


@pytest.fixture(scope="module")
def roomy(models_dir: Path) -> Iterator[WorkerProcess]:
    """The same for the tool tests, in the generic tool mode (the tiny model's template has no
    tool-call syntax), whose grammar needs a larger context."""
    with worker(models_dir / "alpha.gguf", "--ctx-size", "2048", "--tool-mode", "generic") as child:
        yield child


@pytest.fixture
def two_slots(models_dir: Path) -> Iterator[WorkerProcess]:
    args = ("--parallel", "2", "--ctx-size", "8192", "--metrics")
    with worker(models_dir / "alpha.gguf", *args) as child:
        yield child


def test_two_streams_make_progress_together(two_slots: WorkerProcess) -> None:
    # Both ask for more tokens than a slot's context holds, so a runs until its context is
    # full: an engine that ran one request at a time would give b its first token only after
    # that (with --parallel 1 this test fails so), not while a generates.
    timeline = Timeline()
    _stream(two_slots.url, "a", timeline, 30_000)
    timeline.wait_for("a", "token")
    _stream(two_slots.url, "b", timeline, 30_000)
    timeline.wait_for("b", "token")
    # b was admitted while a was generating, not after it.
    assert ("a", "done") not in timeline.events


def _deferred(url: str) -> float:
    text = httpx.get(f"{url}/metrics").text
    line = next(line for line in text.splitlines() if line.startswith("llamacpp:requests_deferred"))
    return float(line.split()[1])


def test_third_request_waits_for_a_free_slot_then_completes(two_slots: WorkerProcess) -> None:
    # Judged by the server's own state: which thread reads its socket first says nothing.
    url = two_slots.url
    body = {"messages": CHAT, "max_tokens": 30_000, "stream": True, "ignore_eos": True}
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body) as a:
        a_lines = a.iter_lines()
        next(line for line in a_lines if '"content":"' in line)
        timeline = Timeline()
        b = _stream(url, "b", timeline, 30_000)
        timeline.wait_for("b", "token")
        third = threading.Thread(
            target=lambda: timeline.note(
                "c", json.dumps(httpx.post(
                    f"{url}/v1/chat/completions",
                    json={"messages": CHAT, "max_tokens": 5, "ignore_eos": True}, timeout=120,
                ).json()["choices"][0]["finish_reason"])
            ),
            daemon=True,
        )  # fmt: skip
        third.start()
        while _deferred(url) < 1:  # c has reached the engine and waits for a slot
            assert third.is_alive()
        assert ("c", '"length"') not in timeline.events
        assert all(slot["is_processing"] for slot in httpx.get(f"{url}/slots").json())
    # a's client is gone: its slot goes to c, which then completes.
    third.join(timeout=120)
    assert ("c", '"length"') in timeline.events
    assert b.is_alive()  # b kept its slot throughout


def test_disconnect_frees_the_slot(models_dir: Path) -> None:
    with worker(models_dir / "alpha.gguf", "--parallel", "1", "--ctx-size", "32768") as child:
        body = {"messages": CHAT, "max_tokens": 30_000, "stream": True, "ignore_eos": True}
        with httpx.stream("POST", f"{child.url}/v1/chat/completions", json=body) as response:
            lines = response.iter_lines()  # kept: dropping the iterator closes the response
            next(line for line in lines if '"content":"' in line)
            busy = httpx.get(f"{child.url}/slots").json()
            assert busy[0]["is_processing"] is True
        # The next request gets the only slot: the disconnected one no longer holds it.
        reply = httpx.post(
            f"{child.url}/v1/chat/completions",
            json={"messages": CHAT, "max_tokens": 3},
            timeout=120,
        ).json()
        assert reply["choices"][0]["finish_reason"] == "length"
        slots = httpx.get(f"{child.url}/slots").json()
        assert slots[0]["is_processing"] is False
        # The cancelled generation stopped early: its slot's cache is far below its budget.
        assert slots[0]["n_prompt_tokens"] < 30_000


def _chat(url: str, messages: list[dict[str, str]], **extra: Any) -> dict[str, Any]:
    body = {"messages": messages, "max_tokens": 8, "temperature": 0, "ignore_eos": True, **extra}
    response = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=120)
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


def test_next_turn_reuses_the_cached_prefix(models_dir: Path) -> None:
    with worker(models_dir / "alpha.gguf", "--parallel", "1") as child:
        first = _chat(child.url, CHAT)
        assert first["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
        answer = first["choices"][0]["message"]["content"]
        history = [
            *CHAT,
            {"role": "assistant", "content": answer},
            {"role": "user", "content": "and?"},
        ]
        second = _chat(child.url, history)
        cached = second["usage"]["prompt_tokens_details"]["cached_tokens"]
        assert cached >= first["usage"]["prompt_tokens"] - 1
        assert second["timings"]["cache_n"] == cached
        assert second["timings"]["prompt_n"] == second["usage"]["prompt_tokens"] - cached


def test_stop_string_ends_generation_and_never_leaks(models_dir: Path) -> None:
    with worker(models_dir / "alpha.gguf", "--parallel", "1") as child:
        # Greedy and without prompt reuse, the same request yields the same text.
        plain = _chat(child.url, CHAT, max_tokens=40, cache_prompt=False)
        text = plain["choices"][0]["message"]["content"]
        words = text.split()
        assert len(words) > 4
        stop = words[3][:3]  # a stop string that starts in the middle of the text
        cut = text[: text.index(stop)]

        stopped = _chat(child.url, CHAT, max_tokens=40, cache_prompt=False, stop=[stop, "zzzz"])
        assert stopped["choices"][0]["message"]["content"] == cut
        assert stopped["choices"][0]["finish_reason"] == "stop"

        body = {
            "messages": CHAT, "max_tokens": 40, "temperature": 0, "cache_prompt": False,
            "stop": [stop], "stream": True, "ignore_eos": True,
        }  # fmt: skip
        with httpx.stream("POST", f"{child.url}/v1/chat/completions", json=body) as response:
            pieces = [
                json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
                for line in response.iter_lines()
                if line.startswith("data: {")
            ]
        assert "".join(pieces) == cut


SCHEMA = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "color": {"enum": ["red", "green", "blue"]},
        # An enum, not minimum/maximum: llama-cpp-python 0.3.36's converter ignores ranges.
        "size": {"enum": [1, 2, 3]},
    },
    "required": ["ok", "color", "size"],
    "additionalProperties": False,
}


def _check_schema(value: Any) -> None:
    assert set(value) == {"ok", "color", "size"}
    assert isinstance(value["ok"], bool)
    assert value["color"] in ("red", "green", "blue")
    assert value["size"] in (1, 2, 3)


@pytest.mark.parametrize(
    "constraint",
    [
        {"response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA}}},
        {"response_format": {"type": "json_object", "schema": SCHEMA}},
        {"json_schema": SCHEMA},
    ],
    ids=["response_format-json_schema", "response_format-json_object", "json_schema"],
)
def test_schema_constrained_output_parses_and_validates(
    plain: WorkerProcess, constraint: dict[str, Any]
) -> None:
    body = {"messages": CHAT, "max_tokens": 200, **constraint}
    reply = httpx.post(f"{plain.url}/v1/chat/completions", json=body, timeout=120).json()
    choice = reply["choices"][0]
    # The grammar only allows the end token once the object is complete.
    assert choice["finish_reason"] == "stop"
    _check_schema(json.loads(choice["message"]["content"]))


def test_json_object_without_schema_is_json(plain: WorkerProcess) -> None:
    body = {
        "prompt": "data:", "n_predict": 400, "temperature": 0,
        "grammar": 'root ::= "{" ws "\\"n\\":" ws [0-9] ws "}"\nws ::= [ ]?',
    }  # fmt: skip
    reply = httpx.post(f"{plain.url}/completion", json=body, timeout=120).json()
    assert set(json.loads(reply["content"])) == {"n"}


def _refused_chat(child: WorkerProcess, extra: dict[str, Any]) -> dict[str, Any]:
    """The error of a chat request with ``extra`` in its body, which must be a 400."""
    body = {"messages": CHAT, "max_tokens": 4, **extra}
    response = httpx.post(f"{child.url}/v1/chat/completions", json=body, timeout=120)
    assert response.status_code == 400
    error: dict[str, Any] = response.json()["error"]
    return error


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"grammar": "root ::= nonsense ("}, "grammar"),
        ({"json_schema": "not an object"}, "json_schema"),
        ({"response_format": {"type": "yaml"}}, "response_format"),
        ({"grammar": 'root ::= "a"', "json_schema": {"type": "object"}}, "only one"),
        ({"logit_bias": {"abc": "high"}}, "logit_bias"),
        ({"logit_bias": {"99999999": 1.0}}, "logit_bias"),
        # llama-server's words (a typical_p of 2 or a presence_penalty of 3 it takes as they are).
        ({"repeat_penalty": 0}, "penalty_repeat"),
        ({"top_k": "forty"}, "top_k"),
        ({"stop": 5}, "stop"),
        ({"messages": "hi"}, "messages"),
    ],
)
def test_bad_parameters_are_400_naming_the_field(
    plain: WorkerProcess, extra: dict[str, Any], field: str
) -> None:
    error = _refused_chat(plain, extra)
    assert error["type"] == "invalid_request_error"
    assert field in error["message"]


def test_a_grammar_llama_cpp_rejects_is_a_400_before_any_stream(plain: WorkerProcess) -> None:
    # GBNF text passes every check before llama.cpp parses it as the generation is queued; that
    # one parse must still answer 400, never a 200 stream that fails, on every generating route.
    bad = {"grammar": "root ::= nonsense (", "max_tokens": 4, "n_predict": 4}
    for path, body in (
        ("/v1/chat/completions", {"messages": CHAT}),
        ("/v1/completions", {"prompt": "x"}),
        ("/completion", {"prompt": "x"}),
        ("/v1/messages", {"messages": CHAT}),
        ("/v1/responses", {"input": "hi"}),
    ):
        for stream in (False, True):
            response = httpx.post(
                f"{plain.url}{path}", json={**body, **bad, "stream": stream}, timeout=60
            )
            assert response.status_code == 400, (path, stream)
            assert response.json()["error"]["message"] == (
                "invalid grammar: the grammar does not parse"
            )
    # The worker is unharmed: the same route with a good grammar answers.
    good = {"prompt": "x", "n_predict": 2, "grammar": 'root ::= "a"+'}
    reply = httpx.post(f"{plain.url}/completion", json=good, timeout=60).json()
    assert set(reply["content"]) <= {"a"}


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"enum": ["Paris", "Rome"]}},
            "required": ["city"],
        },
    },
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_tool_call_comes_back_as_tool_calls(roomy: WorkerProcess, stream: bool) -> None:
    body = {
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [WEATHER], "tool_choice": "required", "max_tokens": 200, "stream": stream,
    }  # fmt: skip
    url = f"{roomy.url}/v1/chat/completions"
    if not stream:
        choice = httpx.post(url, json=body, timeout=120).json()["choices"][0]
        calls, finish = choice["message"]["tool_calls"], choice["finish_reason"]
        assert choice["message"]["content"] is None
    else:
        with httpx.stream("POST", url, json=body, timeout=120) as response:
            chunks = [json.loads(line[6:]) for line in response.iter_lines()
                      if line.startswith("data: {")]  # fmt: skip
        # As OpenAI streams them: a call's id and name, its arguments in pieces, then a
        # last chunk with the reason.
        deltas = [chunk["choices"][0]["delta"] for chunk in chunks]
        first, *rest = [call for delta in deltas for call in delta.get("tool_calls", [])]
        assert all(call["index"] == 0 and "id" not in call for call in rest)
        arguments = "".join(call["function"]["arguments"] for call in (first, *rest))
        calls = [{**first, "function": {**first["function"], "arguments": arguments}}]
        finish = chunks[-1]["choices"][0]["finish_reason"]
    assert finish == "tool_calls"
    assert len(calls) == 1
    assert calls[0]["type"] == "function"
    assert calls[0]["id"].startswith("call_")
    assert calls[0]["function"]["name"] == "get_weather"
    assert json.loads(calls[0]["function"]["arguments"])["city"] in ("Paris", "Rome")


def test_tool_history_is_accepted(roomy: WorkerProcess) -> None:
    call = {"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}  # fmt: skip
    messages = [
        {"role": "user", "content": "Weather in Rome?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]
    body = {"messages": messages, "tools": [WEATHER], "tool_choice": "required",
            "max_tokens": 200}  # fmt: skip
    reply = httpx.post(f"{roomy.url}/v1/chat/completions", json=body, timeout=120)
    assert reply.status_code == 200
    assert reply.json()["choices"][0]["finish_reason"] == "tool_calls"


def test_by_default_a_template_without_tool_calls_answers_tools_in_text(
    plain: WorkerProcess,
) -> None:
    """As llama-server: the template rendered as is, no tool grammar, the answer read as text
    (docs/tool-calls.md); the generic tool mode is --tool-mode generic's."""
    body = {"messages": [{"role": "user", "content": "Weather in Rome?"}], "tools": [WEATHER],
            "tool_choice": "required", "max_tokens": 8, "verbose": True}  # fmt: skip
    reply = httpx.post(f"{plain.url}/v1/chat/completions", json=body, timeout=120).json()
    (choice,) = reply["choices"]
    assert "tool_calls" not in choice["message"]
    assert choice["finish_reason"] == "length"
    prompt = reply["__verbose"]["prompt"]
    assert "Weather in Rome?" in prompt
    assert "You can call these tools" not in prompt


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"tools": [{"type": "function"}]}, "tools[0]"),
        ({"tools": [WEATHER], "tool_choice": {"function": {"name": "nope"}}}, "unknown tool"),
        ({"tools": [WEATHER], "tool_choice": "sometimes"}, "tool_choice"),
        ({"tools": [WEATHER], "grammar": 'root ::= "a"'}, "cannot be combined"),
    ],
)
def test_bad_tool_requests_are_400(
    plain: WorkerProcess, extra: dict[str, Any], message: str
) -> None:
    assert message in _refused_chat(plain, extra)["message"]


def test_a_new_line_once_t_max_predict_ms_is_spent_ends_the_generation() -> None:
    generation = Generation([1], SamplingParams(), None, lambda event: None, max_predict_ms=1)
    generation.first_token = time.perf_counter() - 3600  # generating for an hour already
    assert BatchEngine._out_of_time(generation, b"end\n")
    assert not BatchEngine._out_of_time(generation, b"no new line")  # only a new line ends it
    generation.max_predict_ms = 0  # no limit
    assert not BatchEngine._out_of_time(generation, b"end\n")
