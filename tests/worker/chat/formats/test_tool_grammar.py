"""Each family's tool grammar, eager and lazy, is one llama.cpp parses (real vocabulary)."""

from __future__ import annotations

import ctypes
from typing import Any

import llama_cpp
import pytest

from worker.chat.formats import ThinkingTags, families
from worker.chat.formats.own_shape.gemma4 import GEMMA4
from worker.chat.formats.own_shape.harmony import GPT_OSS
from worker.chat.formats.own_shape.muse import MUSE_GLIMMER
from worker.chat.formats.own_shape.python_tag import PythonTagSyntax
from worker.chat.formats.own_shape.pythonic import LFM2
from worker.chat.formats.own_shape.recipients import FUNCTIONARY_V3_2
from worker.sampling.grammar_sampler import GrammarSampler
from worker.sampling.schema_grammar import SchemaError

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "enum": ["Oslo", "Lima"]}},
                "required": ["city"],
            },
        },
    },
    {"type": "function", "function": {"name": "now"}},
]
SYNTAXES = list(families.__all__)


@pytest.mark.parametrize("name", SYNTAXES)
@pytest.mark.parametrize("lazy", [True, False])
def test_the_grammar_parses_in_llama_cpp(vocab: Any, name: str, lazy: bool) -> None:
    grammar = getattr(families, name).grammar(TOOLS, lazy=lazy, parallel=True)
    assert bool(grammar.triggers) is lazy
    GrammarSampler(vocab, grammar.gbnf, grammar.triggers).free()


@pytest.mark.parametrize("name", SYNTAXES)
def test_an_eager_grammar_lets_a_thinking_model_think_first(vocab: Any, name: str) -> None:
    tags = ThinkingTags("[THINK]", "[/THINK]") if name == "MISTRAL" else ThinkingTags()
    grammar = getattr(families, name).grammar(TOOLS, lazy=False, parallel=False, thinking=tags)
    assert grammar.gbnf.splitlines()[-1].startswith(f"root ::= ({_gbnf(tags.start)}? thought")
    GrammarSampler(vocab, grammar.gbnf, grammar.triggers).free()


def _gbnf(text: str) -> str:
    return '"' + text + '"'


def test_the_grammar_names_only_the_given_tools() -> None:
    grammar = families.HERMES.grammar(TOOLS[1:], lazy=True, parallel=False)
    assert '"\\"now\\""' in grammar.gbnf
    assert "get_weather" not in grammar.gbnf
    assert grammar.gbnf.endswith("root ::= tool-call")  # one call only


def test_triggers_are_escaped_regular_expressions() -> None:
    assert families.GRANITE.grammar(TOOLS, lazy=True, parallel=True).triggers == (
        r"<\|tool_call\|>",
    )
    assert families.LLAMA_3_JSON.grammar(TOOLS, lazy=True, parallel=True).triggers == (r"^\s*(\{)",)


@pytest.mark.parametrize("lazy", [True, False])
def test_llama_3_builtin_calls_follow_the_python_tag(vocab: Any, lazy: bool) -> None:
    search = {"type": "object", "properties": {"query": {"type": "string"}}}
    tools = [
        *TOOLS,
        {"type": "function", "function": {"name": "brave_search", "parameters": search}},
    ]
    syntax = PythonTagSyntax(families.LLAMA_3_JSON).with_tools(tools)
    grammar = syntax.grammar(tools, lazy=lazy, parallel=False)
    assert '"<|python_tag|>brave_search.call(" "query=" ' in grammar.gbnf
    assert grammar.triggers == ((r"^\s*(\{)", r"<\|python_tag\|>") if lazy else ())
    GrammarSampler(vocab, grammar.gbnf, grammar.triggers).free()


def _accepts(vocab: Any, gbnf: str, triggers: tuple[str, ...], text: str) -> bool:
    """Whether llama.cpp's grammar sampler lets ``text`` through, one byte token at a time, and
    then lets the answer end there (a token it rejects gets a -inf logit)."""
    piece = ctypes.create_string_buffer(8)
    byte_tokens: dict[bytes, int] = {}
    for token in range(llama_cpp.llama_vocab_n_tokens(vocab)):
        size = llama_cpp.llama_token_to_piece(vocab, token, piece, 8, 0, False)
        if size == 1:
            byte_tokens.setdefault(piece.raw[:1], token)
    sampler = GrammarSampler(vocab, gbnf, triggers).hand_over()

    def allowed(token: int) -> bool:
        data = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, 0.0, 0.0))
        array = llama_cpp.llama_token_data_array(data, 1, -1, False)
        llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
        return bool(data[0].logit != float("-inf"))

    try:
        for byte in text.encode():
            token = byte_tokens[bytes([byte])]
            if not allowed(token):
                return False
            llama_cpp.llama_sampler_accept(sampler, token)
        return allowed(llama_cpp.llama_vocab_eos(vocab))
    finally:
        llama_cpp.llama_sampler_free(sampler)


# Per family: (syntax, an answer calling get_weather with tool_choice auto, the same as
# required may write it, an answer the grammar must stop once it is triggered)
FAMILIES: dict[str, tuple[Any, str, str, str]] = {
    "gpt-oss": (
        GPT_OSS,
        "Sure.<|start|>assistant<|channel|>commentary to=functions.get_weather "
        '<|constrain|>json<|message|>{"city": "Oslo"}',
        "<|channel|>analysis<|message|>Weather.<|end|><|start|>assistant to=functions.now"
        "<|channel|>commentary<|message|>{}",
        "<|start|>assistant to=functions.get_weather<|channel|>commentary<|message|>"
        '{"city": "Paris"}',
    ),
    "Gemma 4": (
        GEMMA4,
        'Sure.<|tool_call>call:get_weather{city:<|"|>Oslo<|"|>}<tool_call|>',
        "<|channel>thought Weather.<channel|><|tool_call>call:now{}<tool_call|>",
        "<|tool_call>call:delete_all{}<tool_call|>",
    ),
    "LFM2": (
        LFM2,
        'Sure.<|tool_call_start|>[get_weather(city="Oslo")]<|tool_call_end|>',
        "<think>Weather.</think><|tool_call_start|>[now(), get_weather(city='Lima')]"
        "<|tool_call_end|>",
        "<|tool_call_start|>[get_weather(town='Oslo')]<|tool_call_end|>",
    ),
    "Muse Glimmer": (
        MUSE_GLIMMER,
        " to=self<|message|>Weather.<|eom|><|start|>assistant to=get_weather<|message|>"
        '<atem:function_calls>\n<atem:invoke name="get_weather">\n'
        '<atem:parameter name="city">Oslo</atem:parameter>\n</atem:invoke>\n'
        "</atem:function_calls>",
        " to=self<|message|>Weather.<|eom|><|start|>assistant to=now<|message|>"
        '<atem:function_calls><atem:invoke name="now"></atem:invoke></atem:function_calls>',
        ' to=get_weather<|message|><atem:function_calls><atem:invoke name="delete_all">',
    ),
    "Functionary v3.2": (
        FUNCTIONARY_V3_2,
        'all\nSure.>>>get_weather\n{"city": "Oslo"}',
        'all\nLet me see.>>>now\n{}>>>get_weather\n{"city": "Lima"}',
        'all\nSure.>>>get_weather\n{"town": "Oslo"}',
    ),
}


@pytest.mark.parametrize("family", FAMILIES)
def test_family_grammars_hold_calls_to_the_tools(vocab: Any, family: str) -> None:
    syntax, auto, required, wrong = FAMILIES[family]
    lazy = syntax.grammar(TOOLS, lazy=True, parallel=True)
    eager = syntax.grammar(TOOLS, lazy=False, parallel=True)
    assert lazy.triggers
    assert eager.triggers == ()
    assert _accepts(vocab, lazy.gbnf, lazy.triggers, auto)
    assert _accepts(vocab, lazy.gbnf, lazy.triggers, "A plain answer, no call at all.")
    assert not _accepts(vocab, lazy.gbnf, lazy.triggers, wrong)
    assert _accepts(vocab, eager.gbnf, (), required)
    assert not _accepts(vocab, eager.gbnf, (), "A plain answer, no call at all.")


def test_one_call_only_without_parallel_tool_calls(vocab: Any) -> None:
    grammar = LFM2.grammar(TOOLS, lazy=False, parallel=False)
    one = "<|tool_call_start|>[now()]<|tool_call_end|>"
    assert _accepts(vocab, grammar.gbnf, (), one)
    assert not _accepts(vocab, grammar.gbnf, (), one.replace("now()", "now(), now()"))


def test_minimax_m3_closes_each_parameter_by_its_name(vocab: Any) -> None:
    grammar = families.MINIMAX_M3.grammar(TOOLS, lazy=True, parallel=False)
    call = (
        'Sure.]<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="get_weather">'
        "]<]minimax[>[<city>Oslo]<]minimax[>[</city>]<]minimax[>[</invoke>\n"
        "]<]minimax[>[</tool_call>"
    )
    assert _accepts(vocab, grammar.gbnf, grammar.triggers, call)
    wrong = call.replace("</city>", "</town>")
    assert not _accepts(vocab, grammar.gbnf, grammar.triggers, wrong)


def _valued_tool(name: str, value: dict[str, Any]) -> dict[str, Any]:
    """A tool of one required parameter ``v``, its schema ``value`` under ``$defs``."""
    parameters = {
        "type": "object",
        "$defs": {"V": value},
        "properties": {"v": {"$ref": "#/$defs/V"}},
        "required": ["v"],
    }
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def test_each_tool_s_references_are_its_own(vocab: Any) -> None:
    tools = [
        _valued_tool("f", {"type": "string", "maxLength": 3}),
        _valued_tool("g", {"type": "integer", "minimum": 1}),
    ]
    grammar = families.HERMES.grammar(tools, lazy=False, parallel=False)

    def call(name: str, value: str) -> str:
        return f'<tool_call>\n{{"name": "{name}", "arguments": {{"v": {value}}}}}\n</tool_call>'

    assert _accepts(vocab, grammar.gbnf, (), call("f", '"ab"'))
    assert _accepts(vocab, grammar.gbnf, (), call("g", "7"))
    assert not _accepts(vocab, grammar.gbnf, (), call("g", '"ab"'))
    # The request's tools are read, never rewritten: the same tools make the same grammar again.
    assert families.HERMES.grammar(tools, lazy=False, parallel=False) == grammar


def test_a_built_in_call_s_argument_may_refer_to_its_tool_s_schema(vocab: Any) -> None:
    search = _valued_tool("brave_search", {"enum": ["Oslo"]})
    syntax = PythonTagSyntax(families.LLAMA_3_JSON).with_tools([search])
    grammar = syntax.grammar([search], lazy=False, parallel=False)
    call = '<|python_tag|>brave_search.call(v="{}")'
    assert _accepts(vocab, grammar.gbnf, (), call.format("Oslo"))
    assert not _accepts(vocab, grammar.gbnf, (), call.format("Lima"))


def test_tools_schemas_are_converted_within_the_size_caps() -> None:
    # check_schema_size passes each object of 100; allOf merges them into one of 300, which
    # only the conversion sees, as for a request's json_schema (worker/sampling/schema_limits).
    optional = [
        {"type": "object", "properties": {f"o{n}_{i}": {"type": "string"} for i in range(100)}}
        for n in range(3)
    ]
    tool = {"type": "function",
            "function": {"name": "f", "parameters": {"allOf": [{"anyOf": optional}]}}}  # fmt: skip
    with pytest.raises(SchemaError, match=r"JSON schema too large: .* \(an object of 300\)"):
        families.HERMES.grammar([tool], lazy=True, parallel=False)
