"""``/api/chat`` and ``/api/generate`` through the ``ollama`` client, on real llama.cpp workers:
NDJSON streams and whole answers, ``options`` reaching the sampler, ``format``, ``think``,
images, the generate request's ``system``, ``raw``, ``template`` and ``suffix``, and the last
object's ``done_reason`` and counters."""

from __future__ import annotations

import json
from typing import Any

import httpx
import ollama
import pytest

from tests.support.files.tiny_media import png_bytes
from tests.support.files.tiny_mmproj import IMAGE_TOKENS
from tests.support.router_process import RouterProcess

GREEDY: dict[str, Any] = {"temperature": 0, "num_predict": 6}
HI = [{"role": "user", "content": "hello there"}]


def test_a_whole_chat_answer_has_ollamas_shape_and_counters(client: ollama.Client) -> None:
    client.generate(model="alpha", prompt="", keep_alive=0)  # unloaded: this request loads it
    answer = client.chat(model="alpha", messages=HI, options=GREEDY)
    assert answer.done
    assert answer.done_reason == "length"
    assert answer.message.role == "assistant"
    assert answer.message.content
    assert answer.eval_count == 6
    assert answer.prompt_eval_count is not None
    assert answer.prompt_eval_count > 3
    assert answer.eval_duration is not None
    assert answer.eval_duration > 0
    assert answer.total_duration is not None
    assert answer.load_duration is not None
    assert 0 < answer.load_duration < answer.total_duration  # the model was loaded for it
    again = client.chat(model="alpha", messages=HI, options=GREEDY)
    assert again.load_duration == 0
    assert again.message.content == answer.message.content


def test_a_streamed_chat_is_ndjson_pieces_then_a_last_object(client: ollama.Client) -> None:
    whole = client.chat(model="alpha", messages=HI, options=GREEDY)
    parts = list(client.chat(model="alpha:latest", messages=HI, options=GREEDY, stream=True))
    assert len(parts) > 2
    assert not any(part.done for part in parts[:-1])
    assert "".join(part.message.content or "" for part in parts) == whole.message.content
    last = parts[-1]
    assert (last.done, last.done_reason, last.eval_count) == (True, "length", 6)


def test_options_reach_the_sampler(client: ollama.Client) -> None:
    greedy = client.chat(model="alpha", messages=HI, options=GREEDY).message.content
    assert greedy is not None
    # top_k 1 is greedy whatever the temperature; a seed makes sampling repeat.
    top_one = {"temperature": 5.0, "top_k": 1, "num_predict": 6}
    assert client.chat(model="alpha", messages=HI, options=top_one).message.content == greedy
    seeded = {"temperature": 5.0, "top_k": 0, "top_p": 1.0, "min_p": 0, "seed": 7, "num_predict": 6}
    first = client.chat(model="alpha", messages=HI, options=seeded).message.content
    assert client.chat(model="alpha", messages=HI, options=seeded).message.content == first
    assert first != greedy
    short = client.chat(model="alpha", messages=HI, options={**GREEDY, "num_predict": 2})
    assert short.eval_count == 2
    word = greedy.split()[1]
    stopped = client.chat(model="alpha", messages=HI, options={**GREEDY, "stop": [word]})
    assert stopped.done_reason == "stop"
    assert stopped.message.content == greedy[: greedy.index(word)]


def test_format_json_schema_is_followed(client: ollama.Client) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"enum": ["yes", "no"]}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    options = {"temperature": 0, "num_predict": 64}
    reply = client.chat(model="alpha", messages=HI, format=schema, options=options)
    assert json.loads(reply.message.content or "")["answer"] in ("yes", "no")
    generated = client.generate(model="alpha", prompt="hi", format="json", options=options)
    assert isinstance(json.loads(generated.response or ""), dict)


def test_think_is_the_reasoning_split(client: ollama.Client) -> None:
    thought = client.chat(model="thinker", messages=HI, think=True, options=GREEDY)
    # The template opens the thinking: within six tokens, the model is still in it.
    assert thought.message.thinking
    assert not thought.message.content
    plain = client.chat(model="thinker", messages=HI, think=False, options=GREEDY)
    assert plain.message.content
    assert not plain.message.thinking
    streamed = list(
        client.chat(model="thinker", messages=HI, think=True, options=GREEDY, stream=True)
    )
    assert "".join(p.message.thinking or "" for p in streamed) == thought.message.thinking


@pytest.mark.parametrize("think", [True, "high"])
def test_think_on_a_model_that_cannot_think_is_ollamas_400(
    client: ollama.Client, shared_router: RouterProcess, think: bool | str
) -> None:
    with pytest.raises(ollama.ResponseError) as chat:
        client.chat(model="alpha", messages=HI, think=think, options=GREEDY)
    with pytest.raises(ollama.ResponseError) as generate:
        client.generate(model="first", prompt="hi", think=think, options=GREEDY)
    for raised, name in ((chat, "alpha"), (generate, "first")):  # the name as the request says
        assert raised.value.status_code == 400
        assert raised.value.error == f'"{name}" does not support thinking'
    # Ollama's error JSON, streamed or not; ``think: false`` is no request to think.
    body = {"model": "alpha", "messages": HI, "think": think, "stream": True}
    answer = shared_router.client.post("/api/chat", json=body)
    assert (answer.status_code, answer.json()) == (
        400,
        {"error": '"alpha" does not support thinking'},
    )
    assert client.chat(model="alpha", messages=HI, think=False, options=GREEDY).message.content


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def test_tools_and_a_call_history_reach_the_template(client: ollama.Client) -> None:
    options = {"temperature": 0, "num_predict": 1}
    plain = client.chat(model="caller", messages=HI, options=options)
    offered = client.chat(model="caller", messages=HI, tools=[WEATHER], options=options)
    assert plain.prompt_eval_count is not None
    assert offered.prompt_eval_count is not None
    assert offered.prompt_eval_count > plain.prompt_eval_count + 10  # the tool's JSON
    call = {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    history: list[dict[str, Any]] = [
        *HI,
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "sunny", "tool_name": "get_weather"},
    ]
    answered = client.chat(model="caller", messages=history, tools=[WEATHER], options=options)
    assert answered.prompt_eval_count is not None
    assert answered.prompt_eval_count > offered.prompt_eval_count + 10  # the call and its result


CITY_WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "enum": ["Oslo", "Lima"]}},
            "required": ["city"],
        },
    },
}


def test_a_generated_tool_call_comes_in_ollamas_shape(client: ollama.Client) -> None:
    ask = [{"role": "user", "content": "What is the weather in Oslo?"}]
    options = {"temperature": 0, "num_predict": 120}
    whole = client.chat(model="agent", messages=ask, tools=[CITY_WEATHER], options=options)
    assert (whole.done, whole.done_reason) == (True, "stop")
    assert whole.message.content == ""
    assert whole.message.tool_calls is not None
    (call,) = whole.message.tool_calls
    assert call.function.name == "get_weather"
    assert set(call.function.arguments) == {"city"}  # an object, not OpenAI's JSON text
    assert call.function.arguments["city"] in ("Oslo", "Lima")
    parts = list(
        client.chat(model="agent", messages=ask, tools=[CITY_WEATHER], options=options, stream=True)
    )
    assert "".join(part.message.content or "" for part in parts) == ""
    streamed = [call for part in parts for call in part.message.tool_calls or []]
    assert streamed == whole.message.tool_calls  # whole, in one object before the last
    assert not parts[-1].message.tool_calls
    assert (parts[-1].done, parts[-1].done_reason) == (True, "stop")


def test_an_image_reaches_a_model_with_a_projector(client: ollama.Client) -> None:
    options = {"temperature": 0, "num_predict": 2}
    # The text and the image are joined by a newline: without the image, the newline alone.
    text = {"role": "user", "content": "What is this?\n"}
    plain = client.chat(model="seer", messages=[text], options=options)
    image = {"role": "user", "content": "What is this?", "images": [png_bytes(seed=1)]}
    seen = client.chat(model="seer", messages=[image], options=options)
    assert plain.prompt_eval_count is not None
    assert seen.prompt_eval_count == plain.prompt_eval_count + IMAGE_TOKENS
    with pytest.raises(ollama.ResponseError) as caught:
        client.chat(model="alpha", messages=[image], options=options)
    assert caught.value.status_code == 400


def test_generate_goes_through_the_chat_template_unless_raw(client: ollama.Client) -> None:
    chat = client.chat(model="alpha", messages=HI, options=GREEDY)
    generated = client.generate(model="alpha", prompt="hello there", options=GREEDY)
    assert generated.response == chat.message.content
    assert generated.done_reason == "length"
    system = [{"role": "system", "content": "Be brief."}, *HI]
    with_system = client.generate(
        model="alpha", prompt="hello there", system="Be brief.", options=GREEDY
    )
    assert (
        with_system.response
        == client.chat(model="alpha", messages=system, options=GREEDY).message.content
    )
    prompt = "<|im_start|>user\nhello there<|im_end|>\n<|im_start|>assistant\n"
    raw = client.generate(model="alpha", prompt=prompt, raw=True, options=GREEDY)
    assert raw.response == chat.message.content
    template = "<|im_start|>user\n{{ .Prompt }}<|im_end|>\n<|im_start|>assistant\n"
    templated = client.generate(
        model="alpha", prompt="hello there", template=template, options=GREEDY
    )
    assert templated.response == chat.message.content
    parts = list(client.generate(model="alpha", prompt="hello there", options=GREEDY, stream=True))
    assert "".join(p.response or "" for p in parts) == chat.message.content
    assert parts[-1].done


def test_generate_with_a_suffix_fills_in_the_middle(client: ollama.Client) -> None:
    options = {"temperature": 0, "num_predict": 4}
    middle = client.generate(
        model="coder", prompt="def add(a, b):", suffix="    return c", options=options
    )
    assert middle.done
    assert middle.eval_count == 4
    other = client.generate(
        model="coder", prompt="def add(a, b):", suffix="print(x)", options=options
    )
    # The suffix is part of the prompt the model reads.
    assert other.prompt_eval_count != middle.prompt_eval_count


def test_embed_and_the_older_embeddings(client: ollama.Client) -> None:
    embedded = client.embed(model="embedder", input=["hello", "world"])
    assert len(embedded.embeddings) == 2
    assert len(embedded.embeddings[0]) == 64
    assert embedded.embeddings[0] != embedded.embeddings[1]
    older = client.embeddings(model="embedder", prompt="hello")
    assert list(older.embedding) == pytest.approx(list(embedded.embeddings[0]))
    assert client.embed(model="embedder", input="").embeddings == []  # loads, embeds nothing


def test_a_generative_model_embeds_as_ollamas_do(
    client: ollama.Client, shared_router: RouterProcess
) -> None:
    before = client.chat(model="alpha", messages=HI, options=GREEDY)
    embedded = client.embed(model="alpha", input=["hello there", "sunny days"])
    assert len(embedded.embeddings) == 2
    first, second = (list(vector) for vector in embedded.embeddings)
    assert len(first) == 64
    assert first != second
    assert sum(x * x for x in first) == pytest.approx(1.0)  # normalised, as Ollama's
    assert list(client.embeddings(model="alpha", prompt="hello there").embedding) == (
        pytest.approx(first)
    )
    after = client.chat(model="alpha", messages=HI, options=GREEDY)
    assert after.load_duration == 0  # the same worker: no restart with embeddings on
    assert after.message.content == before.message.content
    # Only Ollama's API asks a generative model for vectors; llama-server's routes still refuse.
    refused = httpx.post(
        f"{shared_router.url}/v1/embeddings", json={"model": "alpha", "input": "hi"}
    )
    assert refused.status_code == 501
