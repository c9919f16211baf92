"""The constrained-JSON tool mode (worker.chat.json_tools): plans, prepared conversations, parsed
answers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from worker.chat.json_tools import plan_tools
from worker.sampling.grammars import GrammarError

WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "Current weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
TIME = {"type": "function", "function": {"name": "time"}}


# "required" with no tools is a plain answer, as llama-server answers it (200, no tool call).
@pytest.mark.parametrize(
    ("tools", "choice"),
    [(None, "auto"), ([], "auto"), ([WEATHER], "none"), (None, "required"), ([], "required")],
)
def test_no_tools_or_choice_none_is_no_plan(
    tools: list[dict[str, Any]] | None, choice: str
) -> None:
    assert plan_tools(tools, choice) is None


def test_auto_lets_the_model_answer_directly() -> None:
    plan = plan_tools([WEATHER], "auto")
    assert plan is not None
    assert '{"response": <your reply to the user>}' in plan.system_text
    assert "response" in plan.grammar
    assert '"weather"' in plan.system_text


def test_required_must_call_a_tool() -> None:
    plan = plan_tools([WEATHER], "required")
    assert plan is not None
    assert "response" not in plan.system_text.split("Tools:")[0]
    assert '\\"response\\"' not in plan.grammar


def test_a_named_choice_keeps_only_that_tool() -> None:
    plan = plan_tools([WEATHER, TIME], {"type": "function", "function": {"name": "time"}})
    assert plan is not None
    described = json.loads(plan.system_text.split("Tools: ", 1)[1])
    assert [tool["name"] for tool in described] == ["time"]


@pytest.mark.parametrize(
    ("tools", "choice", "message"),
    [
        ([{"type": "function"}], "auto", r"tools\[0\]"),
        ([WEATHER], {"function": {"name": "nope"}}, "unknown tool 'nope'"),
        ([WEATHER], "sometimes", "tool_choice must be"),
    ],
)
def test_bad_tools_are_grammar_errors(tools: list[Any], choice: Any, message: str) -> None:
    with pytest.raises(GrammarError, match=message):
        plan_tools(tools, choice)


def test_prepare_puts_instructions_first_and_tool_traffic_as_json() -> None:
    plan = plan_tools([WEATHER], "auto")
    assert plan is not None
    call = {"id": "c1", "type": "function",
            "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}  # fmt: skip
    prepared = plan.prepare(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        ]
    )
    assert [m["role"] for m in prepared] == ["system", "user", "assistant", "user"]
    assert prepared[0]["content"] == f"Be brief.\n\n{plan.system_text}"
    assert json.loads(prepared[2]["content"]) == {
        "tool_call": {"name": "weather", "arguments": {"city": "Oslo"}}
    }
    assert json.loads(prepared[3]["content"]) == {"tool_result": {"id": "c1", "content": "sunny"}}


def test_prepare_adds_a_system_message_when_there_is_none() -> None:
    plan = plan_tools([WEATHER], "auto")
    assert plan is not None
    prepared = plan.prepare([{"role": "user", "content": "hi"}])
    assert prepared[0] == {"role": "system", "content": plan.system_text}


def test_parse_a_tool_call() -> None:
    plan = plan_tools([WEATHER], "auto")
    assert plan is not None
    answer = plan.parse('{"tool_call": {"name": "weather", "arguments": {"city": "Oslo"}}}', False)
    assert answer.content == ""
    (call,) = answer.tool_calls
    assert (call.name, call.arguments) == ("weather", '{"city":"Oslo"}')  # llama.cpp's dump


def test_parse_a_direct_response_and_a_cut_short_answer() -> None:
    plan = plan_tools([WEATHER], "auto")
    assert plan is not None
    direct = plan.parse('{"response": "It is sunny."}', False)
    assert (direct.content, direct.tool_calls) == ("It is sunny.", [])
    # Cut by max_tokens: the text so far, as llama-server reads an answer not ended by EOS.
    cut = plan.parse('{"response": "It is', False)
    assert (cut.content, cut.tool_calls) == ("It is", [])
    assert plan.parse('{"tool_call": {"na', False).content == ""


def test_a_stream_s_prefixes_only_grow() -> None:
    # Every prefix gives what the whole gives, cut: content and arguments never change behind.
    plan = plan_tools([WEATHER], "auto")
    assert plan is not None
    response = '{ "response" : "a \\"b\\" \\u00e9 \\ud83d\\ude00 c"}'
    call = '{"tool_call": {"name": "weather", "arguments": { "city": "Oslo" } } }'
    for text in (response, call):
        whole = plan.parse(text, False)
        for end in range(len(text)):
            part = plan.parse(text[:end], True)
            assert whole.content.startswith(part.content)
            for got, final in zip(part.tool_calls, whole.tool_calls, strict=False):
                assert (got.name, final.arguments.startswith(got.arguments)) == (final.name, True)
    assert plan.parse('{"tool_call": {"name": "weather", "arguments": ', True).tool_calls[0].name


def test_a_tool_without_parameters_takes_none() -> None:
    # OpenAI reads a missing ``parameters`` as no parameters: the arguments can only be {}.
    plan = plan_tools([TIME], "required")
    assert plan is not None
    assert '"parameters": {"type": "object", "properties": {}}' in plan.system_text
    assert 'alternative-0-tool-call-arguments ::= "{" space "}"\n' in plan.grammar
