"""The grammar that keeps a model's tool calls well formed, lazily (docs/tool-calls.md).

As llama-server does, the grammar only takes hold once the output reaches the format's trigger
(``<tool_call>``, ``[TOOL_CALLS]``…), so with ``tool_choice: auto`` the model may still answer in
text; ``required`` and a named choice constrain the output from its first token. From the
trigger on, only the request's tools with arguments matching their JSON Schemas can follow.
The arguments' rules come from llama-cpp-python's port of llama.cpp's schema converter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from llama_cpp.llama_grammar import SchemaConverter

from worker.chat_formats.json_calls import JsonToolSyntax
from worker.chat_formats.reasoning import ThinkingTags
from worker.chat_formats.xml_calls import XmlToolSyntax

__all__ = ["ToolGrammar", "tool_grammar"]

# Characters a trigger must escape in llama.cpp's (ECMAScript) regular expressions.
_REGEX_SPECIAL = re.compile(r"([\\^$.|?*+()\[\]{}])")
# llama-cpp-python's converter is untyped; its three methods used here are visit,
# resolve_refs and format_grammar.
_SCHEMA_CONVERTER: Any = SchemaConverter
# An XML argument value: any text that does not close a tag.
_XML_VALUE = 'xml-value ::= ([^<] | "<" [^/])*'


@dataclass(frozen=True, slots=True)
class ToolGrammar:
    gbnf: str
    triggers: tuple[str, ...]  # regular expressions; empty: the grammar holds from the start


def _literal(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") + '"'


def _class(char: str) -> str:
    """``char`` inside a GBNF character class."""
    return "\\" + char if char in "]\\^-" else char


def _functions(tools: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (t["function"]["name"], t["function"].get("parameters") or {"type": "object"})
        for t in tools
    ]


def _json_calls(syntax: JsonToolSyntax, tools: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """The rules for one call, and the grammar of the arguments they use."""
    # Keys in the order the models write them: the id first for Command R7B, last for Mistral.
    keys = [syntax.name_keys[0], syntax.args_keys[0]]
    if syntax.id_key:
        keys.insert(0 if syntax.id_key != "id" else 2, syntax.id_key)
    order = {key: index for index, key in enumerate(keys)}
    converter = _SCHEMA_CONVERTER(
        prop_order=order, allow_fetch=False, dotall=False, raw_pattern=False
    )
    calls: list[str] = []
    named = "(?P<name>" in (syntax.call_head or "")
    for index, (name, parameters) in enumerate(_functions(tools)):
        schema = converter.resolve_refs(parameters, f"tool-{index}")
        if named:
            args = converter.visit(schema, f"tool-{index}-args")
            head = _literal(syntax.write_head.replace("{name}", name))
            tail = _literal(syntax.write_tail) if syntax.write_tail else ""
            calls.append(f"{head} {args} {tail}".strip())
            continue
        properties: dict[str, Any] = {syntax.name_keys[0]: {"const": name},
                                      syntax.args_keys[0]: schema}  # fmt: skip
        if syntax.id_key == "id":  # Mistral Nemo's nine-character call ids
            properties["id"] = {"type": "string", "pattern": "^[a-zA-Z0-9]{9}$"}
        elif syntax.id_key:
            properties[syntax.id_key] = {"type": "string"}
        call = {"type": "object", "properties": properties, "required": list(properties)}
        body = converter.visit(call, f"tool-{index}-call")
        head = _literal(syntax.write_head) if syntax.write_head else ""
        tail = _literal(syntax.write_tail) if syntax.write_tail else ""
        calls.append(f"{head} {body} {tail}".strip())
    return converter.format_grammar(), calls


def _param(written: str, key: str, schema: Any) -> str:
    """A parameter's opening tag; ``{string}`` says whether the schema makes it a string."""
    is_string = isinstance(schema, dict) and schema.get("type") == "string"
    return written.replace("{key}", key).replace("{string}", str(is_string).lower())


def _xml_calls(syntax: XmlToolSyntax, tools: list[dict[str, Any]]) -> tuple[str, list[str]]:
    calls: list[str] = []
    for name, parameters in _functions(tools):
        properties = parameters.get("properties") or {}
        params = " | ".join(
            f"{_literal(_param(syntax.write_param, key, schema))} xml-value "
            f"{_literal(syntax.write_param_end)}"
            for key, schema in properties.items()
        )
        head = _literal(syntax.write_head.replace("{name}", name))
        body = f"({params})* " if params else ""
        calls.append(f"{head} {body}{_literal(syntax.write_tail)}")
    return _XML_VALUE, calls


def tool_grammar(
    syntax: JsonToolSyntax | XmlToolSyntax,
    tools: list[dict[str, Any]],
    *,
    lazy: bool,
    parallel: bool,
    thinking: ThinkingTags | None = None,
) -> ToolGrammar:
    """The grammar for calling ``tools`` in ``syntax``; ``lazy`` waits for the trigger.

    An eager grammar for a thinking model lets it think first, as llama.cpp's does: the start
    tag is optional since a prompt may already have opened the thinking. The thoughts may be
    any text that does not begin the end tag's first two characters (a grammar cannot say
    "anything but this string" more exactly without many rules).
    """
    if isinstance(syntax, JsonToolSyntax):
        rules, calls = _json_calls(syntax, tools)
        array = syntax.call_head is None
    else:
        rules, calls = _xml_calls(syntax, tools)
        array = False
    opening = syntax.trigger if syntax.consume_trigger else ""
    closing = syntax.section_end
    separator = '"\\n"?'
    if array:
        opening, closing, separator = f"{opening}[", f"]{closing}", '", "'
    repeat = f" ({separator} tool-call)*" if parallel else ""
    # Models put a newline inside a section's markers (MiniMax, DeepSeek): let them.
    head = f"{_literal(opening)} [ \\t\\n]* " if opening else ""
    tail = f" [ \\t\\n]* {_literal(closing)}" if closing else ""
    think = ""
    rules_extra = ""
    if thinking is not None and not lazy:
        first, second = thinking.end[0], thinking.end[1]
        think = f"({_literal(thinking.start)}? thought {_literal(thinking.end)} [ \\t\\n]*)? "
        rules_extra = f"\nthought ::= ([^{_class(first)}] | {_literal(first)} [^{_class(second)}])*"
    root = f"root ::= {think}{head}tool-call{repeat}{tail}"
    alternatives = " | ".join(f"( {call} )" for call in calls)
    gbnf = "\n".join((rules + rules_extra, f"tool-call ::= {alternatives}", root))
    if not lazy:
        return ToolGrammar(gbnf, ())
    trigger = _REGEX_SPECIAL.sub(r"\\\1", syntax.trigger)
    if isinstance(syntax, JsonToolSyntax) and syntax.at_start:
        trigger = rf"^\s*({trigger})"
    return ToolGrammar(gbnf, (trigger,))
