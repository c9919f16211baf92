"""Tool grammars of the families whose answers have a shape of their own: gpt-oss (Harmony),
Gemma 4, LFM2, Functionary v3.2 and Muse Glimmer (docs/tool-calls.md), built as llama.cpp's
parsers for them build theirs (``common/parsers/*.cpp``): lazy with the family's own triggers for
``tool_choice: auto``, the whole answer's shape for ``required`` and a named choice.
"""

from __future__ import annotations

from typing import Any

from worker.chat.formats.gbnf import (
    ToolGrammar,
    functions,
    literal,
    regex_escape,
    schema_converter,
    text_without,
)
from worker.chat.formats.gemma4 import Gemma4Syntax
from worker.chat.formats.harmony import HarmonySyntax
from worker.chat.formats.muse import START, MuseSyntax
from worker.chat.formats.pythonic import PythonicSyntax
from worker.chat.formats.recipients import RecipientSyntax

__all__ = ["FamilySyntax", "family_grammar"]

FamilySyntax = HarmonySyntax | Gemma4Syntax | PythonicSyntax | RecipientSyntax | MuseSyntax

# llama.cpp's "space" (json-schema-to-grammar.cpp's SPACE_RULE): a bounded run, so a model
# cannot pad a call forever. Named apart: llama-cpp-python's converter defines its own "space".
_SPACE = 'gap ::= | " " | "\\n"{1,2} [ \\t]{0,20}'
# gpt-oss: llama.cpp's triggers, the first two for a call at the very start of the answer.
_HARMONY_TRIGGERS = (
    r"^\s+to$",
    r"^<\|channel\|>(?:commentary|analysis)\s+to=functions$",
    r"<\|start\|>assistant(\s+to)",
    r"<\|start\|>assistant(<\|channel\|>(?:commentary|analysis)\s+to)",
)


def _choice(calls: list[str]) -> str:
    return " | ".join(f"( {call} )" for call in calls)


def _harmony(tools: list[dict[str, Any]], lazy: bool) -> ToolGrammar:
    converter = schema_converter()
    calls = []
    for index, (name, parameters) in enumerate(functions(tools)):
        args = converter.visit(converter.resolve_refs(parameters, f"tool-{index}"),
                               f"tool-{index}-args")  # fmt: skip
        recipient = literal(f" to=functions.{name}")
        calls.append(f'{recipient} channel constraint "<|message|>" {args}')
        calls.append(f'channel {recipient} constraint "<|message|>" {args}')
    rules = [
        converter.format_grammar(),
        _SPACE,
        'channel ::= "<|channel|>" ("commentary" | "analysis")',
        'constraint ::= (gap "<|constrain|>"? [A-Za-z0-9_-]+)?',
        f"tool-call ::= {_choice(calls)}",
    ]
    if lazy:
        return ToolGrammar("\n".join([*rules, "root ::= tool-call"]), _HARMONY_TRIGGERS)
    # Thinking and preambles may come first, each its own message, as llama.cpp allows.
    rules += [
        f"message-text ::= {text_without('<|end|>')}",
        'stray ::= ("<|channel|>commentary" " to=assistant"?)?',
        'analysis ::= stray "<|channel|>analysis<|message|>" message-text "<|end|>"',
        'preamble ::= "<|channel|>commentary<|message|>" message-text "<|end|>"',
        'root ::= ((analysis | preamble) "<|start|>assistant")* tool-call',
    ]
    return ToolGrammar("\n".join(rules), ())


_GEMMA4_VALUES = (
    'gemma4-string ::= "<|\\"|>" ([^<] | "<" [^|])* "<|\\"|>"',
    'gemma4-number ::= "-"? [0-9]+ ("." [0-9]+)? ([eE] [-+]? [0-9]+)?',
    'gemma4-kv ::= [^:}]+ ":" gap gemma4-value',
    'gemma4-dict ::= "{" gap ("}" | gemma4-kv ("," gap gemma4-kv)* gap "}")',
    'gemma4-array ::= "[" gap ("]" | gemma4-value ("," gap gemma4-value)* gap "]")',
    "gemma4-value ::= gemma4-string | gemma4-dict | gemma4-array | gemma4-number"
    ' | "true" | "false" | "null"',
)


def _gemma4(tools: list[dict[str, Any]], lazy: bool, parallel: bool) -> ToolGrammar:
    calls = [f'"<|tool_call>call:" {literal(name)} gemma4-dict "<tool_call|>"'
             for name, _ in functions(tools)]  # fmt: skip
    repeat = " tool-call*" if parallel else ""
    rules = [_SPACE, *_GEMMA4_VALUES, f"tool-call ::= {_choice(calls)}"]
    if lazy:
        return ToolGrammar(
            "\n".join([*rules, f"root ::= tool-call{repeat}"]), (regex_escape("<|tool_call>"),)
        )
    thought = f'("<|channel>thought" {text_without("<channel|>")} "<channel|>")?'
    root = f'root ::= "<|turn>model\\n"? {thought} tool-call{repeat}'
    return ToolGrammar("\n".join([*rules, root]), ())


_PYTHON_VALUES = (
    'py-string ::= "\\"" ([^"\\\\] | "\\\\" [^\\n])* "\\""'
    ' | "\'" ([^\'\\\\] | "\\\\" [^\\n])* "\'"',
    'py-number ::= "-"? [0-9]+ ("." [0-9]+)? ([eE] [-+]? [0-9]+)?',
    'py-dict ::= "{" gap ("}" | py-kv ("," gap py-kv)* gap "}")',
    'py-kv ::= py-string gap ":" gap py-value',
    'py-list ::= "[" gap ("]" | py-value ("," gap py-value)* gap "]")',
    "py-value ::= py-dict | py-list | py-string | py-number"
    ' | "True" | "False" | "None" | "true" | "false" | "null"',
)


def _pythonic(
    syntax: PythonicSyntax, tools: list[dict[str, Any]], lazy: bool, parallel: bool
) -> ToolGrammar:
    calls = []
    for name, parameters in functions(tools):
        properties = parameters.get("properties") or {}
        args = " | ".join(
            f"{literal(key + '=')} "
            + ("py-string" if isinstance(s, dict) and s.get("type") == "string" else "py-value")
            for key, s in properties.items()
        )
        body = f'( {args} ) ("," gap ( {args} ))*' if args else ""
        calls.append(f'{literal(name + "(")} gap {body} gap ")"')
    repeat = ' ("," gap tool-call)*' if parallel else ""
    section = f'{literal(syntax.trigger)} "[" gap tool-call{repeat} gap "]" {literal(syntax.end)}'
    rules = [_SPACE, *_PYTHON_VALUES, f"tool-call ::= {_choice(calls)}"]
    if lazy:
        return ToolGrammar(
            "\n".join([*rules, f"root ::= {section}"]), (regex_escape(syntax.trigger),)
        )
    before = text_without(syntax.trigger)  # thinking and text may come first, as in llama.cpp
    return ToolGrammar("\n".join([*rules, f"root ::= {before} {section}"]), ())


def _recipients(
    syntax: RecipientSyntax, tools: list[dict[str, Any]], lazy: bool, parallel: bool
) -> ToolGrammar:
    converter = schema_converter()
    calls = []
    for index, (name, parameters) in enumerate(functions(tools)):
        args = converter.visit(converter.resolve_refs(parameters, f"tool-{index}"),
                               f"tool-{index}-args")  # fmt: skip
        calls.append(f"{literal(name + chr(10))} {args}")
    repeat = ' (">>>" tool-call)*' if parallel else ""
    rules = [converter.format_grammar(), f"tool-call ::= {_choice(calls)}"]
    if lazy:
        # A call opens the answer (the prompt ends with ">>>") or follows ">>>" later.
        everyone = regex_escape(syntax.everyone)
        triggers = (rf"^(?!{everyone}\n)([\w.-]+\n)", rf"(>>>)(?!{everyone}\n)[\w.-]+\n")
        return ToolGrammar("\n".join([*rules, f'root ::= ">>>"? tool-call{repeat}']), triggers)
    content = f'{literal(syntax.everyone + chr(10))} {text_without(">>>")} ">>>"'
    return ToolGrammar("\n".join([*rules, f"root ::= ({content})? tool-call{repeat}"]), ())


# Muse Glimmer: llama.cpp's trigger, a message to a recipient other than self or user.
_MUSE_TRIGGER = (
    r"(?:^|<\|start\|>assistant)( to=(?!self<\|message\|>)(?!user<\|message\|>)[^<]*?"
    r"<\|message\|>)"
)


def _muse(
    syntax: MuseSyntax, tools: list[dict[str, Any]], lazy: bool, parallel: bool
) -> ToolGrammar:
    calls = []
    for name, parameters in functions(tools):
        params = " | ".join(
            f"{literal(syntax.calls.write_param.replace('{key}', key))} muse-value "
            '"</atem:parameter>"'
            for key in parameters.get("properties") or {}
        )
        body = f"(( {params} ) gap)* " if params else ""
        head = f'"<atem:invoke name=\\"" {literal(name)} "\\">" gap'
        calls.append(
            f'" to=" [^<]* "<|message|><atem:function_calls>" gap {head} {body}'
            '"</atem:invoke>" gap "</atem:function_calls>"'
        )
    repeat = f' ("<|eom|>" {literal(START)} tool-call)*' if parallel else ""
    rules = [
        _SPACE,
        'muse-value ::= ([^<] | "<" [^/])*',
        f"tool-call ::= {_choice(calls)}",
    ]
    if lazy:
        return ToolGrammar("\n".join([*rules, f"root ::= tool-call{repeat}"]), (_MUSE_TRIGGER,))
    thinking = f'" to=self<|message|>" {text_without("<|eom|>")} "<|eom|>" {literal(START)}'
    return ToolGrammar("\n".join([*rules, f"root ::= ({thinking})* tool-call{repeat}"]), ())


def family_grammar(
    syntax: FamilySyntax, tools: list[dict[str, Any]], *, lazy: bool, parallel: bool
) -> ToolGrammar:
    """The grammar for calling ``tools`` in ``syntax``; ``lazy`` waits for its triggers."""
    if isinstance(syntax, HarmonySyntax):
        return _harmony(tools, lazy)  # gpt-oss makes one call per answer
    if isinstance(syntax, Gemma4Syntax):
        return _gemma4(tools, lazy, parallel)
    if isinstance(syntax, PythonicSyntax):
        return _pythonic(syntax, tools, lazy, parallel)
    if isinstance(syntax, MuseSyntax):
        return _muse(syntax, tools, lazy, parallel)
    return _recipients(syntax, tools, lazy, parallel)
