"""Every tool-call syntax on outputs written the way its models write them, whole and streamed.

As llama.cpp's test-chat does, each output is also fed as a stream split at every character
position (and one character at a time): the streamed message must end equal to the whole one,
and each call's argument pieces must add up to its final arguments.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.output_splits import calls_of, every_split
from worker.chat.formats import (
    NativeSyntax,
    OutputParser,
    OutputStream,
    ParsedMessage,
    detect_format,
)
from worker.chat.formats import families as f

WEATHER_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    }
]
OSLO = {"city": "Oslo", "days": 2}

# (syntax, model output, expected content, expected calls as (name, arguments object)).
CASES: list[tuple[str, NativeSyntax, str, str, list[tuple[str, Any]]]] = [
    ("hermes", f.HERMES,
     'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}'
     "\n</tool_call>",
     "Checking.\n", [("get_weather", OSLO)]),
    ("hermes-parallel", f.HERMES,
     '<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n'
     '<tool_call>\n{"name": "b", "arguments": {}}\n</tool_call>',
     "", [("a", {"x": 1}), ("b", {})]),
    ("hermes-arguments-first", f.HERMES,
     '<tool_call>{"arguments": {"x": "y"}, "name": "a"}</tool_call>', "", [("a", {"x": "y"})]),
    ("mistral-nemo", f.MISTRAL_NEMO,
     '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}, '
     '"id": "abcDEF123"}]',
     "", [("get_weather", OSLO)]),
    ("mistral", f.MISTRAL,
     '[TOOL_CALLS]get_weather[ARGS]{"city": "Oslo", "days": 2}[TOOL_CALLS]b[ARGS]{}',
     "", [("get_weather", OSLO), ("b", {})]),
    ("mistral-call-id", f.MISTRAL,
     '[TOOL_CALLS]get_weather[CALL_ID]123456789[ARGS]{"city": "Oslo", "days": 2}',
     "", [("get_weather", OSLO)]),
    ("llama-3", f.LLAMA_3_JSON,
     '{"name": "get_weather", "parameters": {"city": "Oslo", "days": 2}}',
     "", [("get_weather", OSLO)]),
    ("functionary-v3.1", f.FUNCTIONARY_V3_1,
     'Sure <function=get_weather>{"city": "Oslo", "days": 2}</function>',
     "Sure ", [("get_weather", OSLO)]),
    ("firefunction-v2", f.FIREFUNCTION_V2,
     'functools[{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}]',
     "", [("get_weather", OSLO)]),
    ("granite", f.GRANITE,
     '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}]',
     "", [("get_weather", OSLO)]),
    ("command-r7b", f.COMMAND_R7B,
     '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", '
     '"parameters": {"city": "Oslo", "days": 2}}\n]<|END_ACTION|>',
     "", [("get_weather", OSLO)]),
    ("deepseek-r1", f.DEEPSEEK_R1,
     "<\uff5ctool\u2581calls\u2581begin\uff5c><\uff5ctool\u2581call\u2581begin\uff5c>function"
     "<\uff5ctool\u2581sep\uff5c>get_weather\n```json\n{\"city\": \"Oslo\", \"days\": 2}\n```"
     "<\uff5ctool\u2581call\u2581end\uff5c><\uff5ctool\u2581calls\u2581end\uff5c>",
     "", [("get_weather", OSLO)]),
    ("deepseek-v3.1", f.DEEPSEEK_V3_1,
     "<\uff5ctool\u2581calls\u2581begin\uff5c><\uff5ctool\u2581call\u2581begin\uff5c>get_weather"
     "<\uff5ctool\u2581sep\uff5c>{\"city\": \"Oslo\", \"days\": 2}"
     "<\uff5ctool\u2581call\u2581end\uff5c><\uff5ctool\u2581calls\u2581end\uff5c>",
     "", [("get_weather", OSLO)]),
    ("kimi-k2", f.KIMI_K2,
     "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
     '<|tool_call_argument_begin|>{"city": "Oslo", "days": 2}<|tool_call_end|>'
     "<|tool_calls_section_end|>",
     "", [("get_weather", OSLO)]),
    ("qwen3-coder", f.QWEN3_CODER,
     "Let me check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n"
     "<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>",
     "Let me check.\n", [("get_weather", OSLO)]),
    ("qwen3-coder-string-that-looks-like-a-number", f.QWEN3_CODER,
     "<tool_call>\n<function=get_weather>\n<parameter=city>\n42\n</parameter>\n</function>\n"
     "</tool_call>",
     "", [("get_weather", {"city": "42"})]),
    ("glm-4.5", f.GLM_4_5,
     "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Oslo</arg_value>\n"
     "<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>",
     "", [("get_weather", OSLO)]),
    ("minimax-m2", f.MINIMAX_M2,
     '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Oslo</parameter>\n'
     '<parameter name="days">2</parameter>\n</invoke>\n</minimax:tool_call>',
     "", [("get_weather", OSLO)]),
    ("seed-oss", f.SEED_OSS,
     "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Oslo</parameter>\n"
     "<parameter=days>2</parameter>\n</function>\n</seed:tool_call>",
     "", [("get_weather", OSLO)]),
    ("minimax-m1", f.MINIMAX_M1,
     'Sure.\n<tool_calls>\n{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}\n'
     '{"name": "b", "arguments": {}}\n</tool_calls>',
     "Sure.\n", [("get_weather", OSLO), ("b", {})]),
    ("command-r-plus", f.COMMAND_R_PLUS,
     'Action:\n```json\n[\n    {\n        "tool_name": "get_weather",\n        "parameters": '
     '{"city": "Oslo", "days": 2}\n    }\n]```',
     "", [("get_weather", OSLO)]),
    ("gigachat-3.1", f.GIGACHAT_3_1,
     '<|function_call|>{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}',
     "", [("get_weather", OSLO)]),
    ("hy3", f.HY3,
     "<tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>\n"
     "<arg_key:opensource>city</arg_key:opensource>\n<arg_value:opensource>Oslo"
     "</arg_value:opensource>\n<arg_key:opensource>days</arg_key:opensource>\n"
     "<arg_value:opensource>2</arg_value:opensource>\n</tool_call:opensource>\n"
     "</tool_calls:opensource>",
     "", [("get_weather", OSLO)]),
    ("gigachat-3", f.GIGACHAT_3,
     'Let me see.<|message_sep|>\n\nfunction call<|role_sep|>\n'
     '{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}',
     "Let me see.", [("get_weather", OSLO)]),
    ("minicpm5", f.MINICPM5,
     'Sure.\n<function name="get_weather"><param name="city">Oslo</param>'
     '<param name="days">2</param></function>',
     "Sure.\n", [("get_weather", OSLO)]),
    ("apertus", f.APERTUS,
     'Sure.<|tools_prefix|>[{"get_weather": {"city": "Oslo", "days": 2}}, {"b": {}}]'
     "<|tools_suffix|>",
     "Sure.", [("get_weather", OSLO), ("b", {})]),
    ("kimi-k3", f.KIMI_K3,
     '<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>'
     '<|open|>argument key="city" type="string"<|sep|>Oslo<|close|>argument<|sep|>'
     '<|open|>argument key="days" type="number"<|sep|>2<|close|>argument<|sep|>'
     "<|close|>call<|sep|><|close|>tools<|sep|>",
     "", [("get_weather", OSLO)]),
    ("minimax-m3", f.MINIMAX_M3,
     "Sure.]<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name=\"get_weather\">"
     "]<]minimax[>[<city>Oslo]<]minimax[>[</city>]<]minimax[>[<days>2]<]minimax[>[</days>"
     "]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>",
     "Sure.", [("get_weather", OSLO)]),
    ("apriel", f.APRIEL,
     'Sure.\n<tool_calls>[{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}]'
     "</tool_calls>",
     "Sure.\n", [("get_weather", OSLO)]),
    ("nemotron-v2", f.NEMOTRON_V2,
     '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}]</TOOLCALL>',
     "", [("get_weather", OSLO)]),
    ("solar-open", f.SOLAR_OPEN,
     "<|tool_call:begin|>call_7<|tool_call:name|>get_weather<|tool_call:args|>"
     '{"city": "Oslo", "days": 2}<|tool_call:end|>',
     "", [("get_weather", OSLO)]),
    ("deepseek-v3.2", f.DEEPSEEK_V3_2,
     "<\uff5cDSML\uff5cfunction_calls>\n<\uff5cDSML\uff5cinvoke name=\"get_weather\">\n"
     "<\uff5cDSML\uff5cparameter name=\"city\" string=\"true\">Oslo</\uff5cDSML\uff5cparameter>\n"
     "<\uff5cDSML\uff5cparameter name=\"days\" string=\"false\">2</\uff5cDSML\uff5cparameter>\n"
     "</\uff5cDSML\uff5cinvoke>\n</\uff5cDSML\uff5cfunction_calls>",
     "", [("get_weather", OSLO)]),
    ("deepseek-v4-string-true-beats-the-schema", f.DEEPSEEK_V4,
     "<\uff5cDSML\uff5ctool_calls>\n<\uff5cDSML\uff5cinvoke name=\"get_weather\">\n"
     "<\uff5cDSML\uff5cparameter name=\"days\" string=\"true\">2</\uff5cDSML\uff5cparameter>\n"
     "</\uff5cDSML\uff5cinvoke>\n</\uff5cDSML\uff5ctool_calls>",
     "", [("get_weather", {"days": "2"})]),
]  # fmt: skip


def _parser(syntax: NativeSyntax) -> OutputParser:
    tools: Any = syntax.with_tools(WEATHER_TOOLS) if hasattr(syntax, "with_tools") else syntax
    return OutputParser(tools=tools)


def _streamed(parser: OutputParser, pieces: list[str]) -> tuple[ParsedMessage, dict[int, str]]:
    """The message a client ends up with, and each call's argument pieces joined."""
    stream = OutputStream(parser)
    deltas = [stream.feed(piece) for piece in pieces] + [stream.finish()]
    joined: dict[int, str] = {}
    for delta in deltas:
        for index, call in delta.tool_calls:
            joined[index] = joined.get(index, "") + call.arguments
    return stream.sent, joined


@pytest.mark.parametrize(("syntax", "text", "content", "calls"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_a_whole_output(
    syntax: NativeSyntax, text: str, content: str, calls: list[tuple[str, Any]]
) -> None:
    message = _parser(syntax).whole(text)
    assert (message.content, calls_of(message)) == (content, calls)
    assert all(call.id for call in message.tool_calls)


@pytest.mark.parametrize(("syntax", "text", "content", "calls"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_streamed_split_at_every_position(
    syntax: NativeSyntax, text: str, content: str, calls: list[tuple[str, Any]]
) -> None:
    parser = _parser(syntax)
    for pieces in every_split(text):
        sent, joined = _streamed(parser, pieces)
        assert (sent.content, calls_of(sent)) == (content, calls), pieces
        assert [joined[i] for i in range(len(calls))] == [c.arguments for c in sent.tool_calls]


@pytest.mark.parametrize(
    ("syntax", "text"),
    [
        (f.HERMES, '<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call>'),
        (f.HERMES, "<tool_call>not json</tool_call>"),
        (f.HERMES, '<tool_call>{"arguments": {}}</tool_call>'),  # no name
        (f.HERMES, '<tool_call>{"name": "get_weather", "arguments": {"city": "Os'),  # cut short
        (f.MISTRAL_NEMO, '[TOOL_CALLS]{"name": "a"}'),  # not an array
        (f.APERTUS, '<|tools_prefix|>[{"a": {}, "b": {}}]<|tools_suffix|>'),  # two names
        (f.MISTRAL_NEMO, '[TOOL_CALLS][{"name": "a", "arguments": [1]}]'),
        (f.QWEN3_CODER, "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo"),
        (f.QWEN3_CODER, "<tool_call>\nno function here\n</tool_call>"),
        (f.MINIMAX_M2, '<minimax:tool_call>\n<invoke name="a">\n<parameter name="x">1</invoke>'),
    ],
)
def test_a_malformed_tool_call_is_returned_as_text(syntax: NativeSyntax, text: str) -> None:
    parser = _parser(syntax)
    message = parser.whole(text)
    assert (message.content, message.tool_calls) == (text, [])
    sent, _ = _streamed(parser, list(text))
    assert sent.content == text


def test_text_without_a_call_streams_as_it_comes_but_holds_back_a_maybe_trigger() -> None:
    stream = OutputStream(_parser(f.HERMES))
    assert stream.feed("Hello <tool").content == "Hello "
    assert stream.feed("tip>").content == "<tooltip>"
    assert stream.finish().content == ""
    assert stream.sent.content == "Hello <tooltip>"


def test_llama_3_json_only_counts_at_the_start() -> None:
    text = 'Use {"name": "x", "parameters": {}} like this.'
    message = _parser(f.LLAMA_3_JSON).whole(text)
    assert (message.content, message.tool_calls) == (text, [])


def test_a_model_written_call_id_is_kept() -> None:
    text = '[TOOL_CALLS][{"name": "a", "arguments": {}, "id": "abcDEF123"}]'
    assert _parser(f.MISTRAL_NEMO).whole(text).tool_calls[0].id == "abcDEF123"
    text = "<|tool_call:begin|>call_7<|tool_call:name|>a<|tool_call:args|>{}<|tool_call:end|>"
    assert _parser(f.SOLAR_OPEN).whole(text).tool_calls[0].id == "call_7"


def test_a_kimi_k3_answer_splits_into_thinking_response_andcalls_of() -> None:
    chat_format = detect_format("<|open|>message<|sep|><|close|>message<|sep|><|end_of_msg|>")
    assert chat_format.tools is not None
    assert chat_format.thinking is not None
    parser = OutputParser(chat_format.tools, chat_format.thinking, thinking_open=True,
                          content_markers=chat_format.content_markers)  # fmt: skip
    text = (
        "Look it up.<|close|>think<|sep|><|open|>response<|sep|>Checking.<|close|>response<|sep|>"
        '<|open|>tools<|sep|><|open|>call tool="now" index="1"<|sep|><|close|>call<|sep|>'
        "<|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>"
    )
    for message in (parser.whole(text), _streamed(parser, list(text))[0]):
        assert (message.reasoning, message.content, calls_of(message)) == (
            "Look it up.",
            "Checking.",
            [("now", {})],
        )
