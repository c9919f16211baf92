"""The grammar that keeps a model's tool calls well formed, lazily (docs/tool-calls.md).

As llama-server does, the grammar only takes hold once the output reaches the format's trigger
(``<tool_call>``, ``[TOOL_CALLS]``…), so with ``tool_choice: auto`` the model may still answer in
text; ``required`` and a named choice constrain the output from its first token. From the
trigger on, only the request's tools with arguments matching their JSON Schemas can follow.
The arguments' rules come from llama-cpp-python's port of llama.cpp's schema converter.
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
from worker.chat.formats.json_calls import JsonToolSyntax
from worker.chat.formats.python_tag import BUILTIN_TOOLS, PythonTagSyntax
from worker.chat.formats.reasoning import ThinkingTags
from worker.chat.formats.xml_calls import XmlToolSyntax

__all__ = ["ToolGrammar", "tool_grammar"]

# An XML argument value: any text that does not close a tag.
_XML_VALUE = 'xml-value ::= ([^<] | "<" [^/])*'


def _converter(syntax: JsonToolSyntax) -> Any:
    # Keys in the order the models write them: the id first for Command R7B, last for Mistral.
    keys = [syntax.name_keys[0], syntax.args_keys[0]]
    if syntax.id_key:
        keys.insert(0 if syntax.id_key != "id" else 2, syntax.id_key)
    order = {key: index for index, key in enumerate(keys)}
    return schema_converter(order)


def _json_calls(syntax: JsonToolSyntax, tools: list[dict[str, Any]], converter: Any) -> list[str]:
    """Each tool's call; the converter collects the rules of the arguments they use."""
    calls: list[str] = []
    named = "(?P<name>" in (syntax.call_head or "")
    for index, (name, parameters) in enumerate(functions(tools)):
        schema = converter.resolve_refs(parameters, f"tool-{index}")
        if named:
            args = converter.visit(schema, f"tool-{index}-args")
            head = literal(syntax.write_head.replace("{name}", name))
            tail = literal(syntax.write_tail) if syntax.write_tail else ""
            calls.append(f"{head} {args} {tail}".strip())
            continue
        properties: dict[str, Any] = {syntax.name_keys[0]: {"const": name},
                                      syntax.args_keys[0]: schema}  # fmt: skip
        if syntax.name_is_key:
            properties = {name: schema}
        if syntax.id_key == "id":  # Mistral Nemo's nine-character call ids
            properties["id"] = {"type": "string", "pattern": "^[a-zA-Z0-9]{9}$"}
        elif syntax.id_key:
            properties[syntax.id_key] = {"type": "string"}
        call = {"type": "object", "properties": properties, "required": list(properties)}
        body = converter.visit(call, f"tool-{index}-call")
        head = literal(syntax.write_head) if syntax.write_head else ""
        tail = literal(syntax.write_tail) if syntax.write_tail else ""
        calls.append(f"{head} {body} {tail}".strip())
    return calls


def _param(written: str, key: str, schema: Any) -> str:
    """A parameter's opening tag; ``{string}`` says whether the schema makes it a string."""
    is_string = isinstance(schema, dict) and schema.get("type") == "string"
    return written.replace("{key}", key).replace("{string}", str(is_string).lower())


def _xml_calls(syntax: XmlToolSyntax, tools: list[dict[str, Any]]) -> tuple[str, list[str]]:
    calls: list[str] = []
    for name, parameters in functions(tools):
        properties = parameters.get("properties") or {}
        params = " | ".join(
            f"{literal(_param(syntax.write_param, key, schema))} xml-value "
            f"{literal(_param(syntax.write_param_end, key, schema))}"
            for key, schema in properties.items()
        )
        head = literal(syntax.write_head.replace("{name}", name))
        body = f"({params})* " if params else ""
        calls.append(f"{head} {body}{literal(syntax.write_tail)}")
    return _XML_VALUE, calls


def _builtin_calls(
    syntax: PythonTagSyntax, tools: list[dict[str, Any]], converter: Any
) -> list[str]:
    """Llama 3.x's ``<|python_tag|>name.call(k=v, …)`` for the request's built-in tools, each
    argument a JSON value of its schema, as llama.cpp's grammar writes them."""
    calls: list[str] = []
    for index, (name, parameters) in enumerate(functions(tools)):
        if name not in syntax.builtin:
            continue
        schema = converter.resolve_refs(parameters, f"builtin-{index}")
        properties = schema.get("properties") or {BUILTIN_TOOLS[name]: {"type": "string"}}
        args = ' ", " '.join(
            f"{literal(key + '=')} {converter.visit(value, f'builtin-{index}-{key}')}"
            for key, value in properties.items()
        )
        calls.append(f"{literal(syntax.trigger + name + '.call(')} {args} {literal(')')}")
    return calls


def tool_grammar(
    requested: JsonToolSyntax | XmlToolSyntax | PythonTagSyntax,
    tools: list[dict[str, Any]],
    *,
    lazy: bool,
    parallel: bool,
    thinking: ThinkingTags | None = None,
) -> ToolGrammar:
    """The grammar for calling ``tools`` in ``requested``; ``lazy`` waits for the trigger.

    An eager grammar for a thinking model lets it think first, as llama.cpp's does: the start
    tag is optional since a prompt may already have opened the thinking. The thoughts may be
    any text that does not begin the end tag's first two characters (a grammar cannot say
    "anything but this string" more exactly without many rules).
    """
    builtin: list[str] = []
    python_tag = requested if isinstance(requested, PythonTagSyntax) else None
    syntax = requested.custom if isinstance(requested, PythonTagSyntax) else requested
    if isinstance(syntax, JsonToolSyntax):
        converter = _converter(syntax)
        calls = _json_calls(syntax, tools, converter)
        if python_tag is not None:
            builtin = _builtin_calls(python_tag, tools, converter)
        calls += builtin
        rules = converter.format_grammar()
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
    head = f"{literal(opening)} [ \\t\\n]* " if opening else ""
    tail = f" [ \\t\\n]* {literal(closing)}" if closing else ""
    think = ""
    rules_extra = ""
    if thinking is not None and not lazy:
        think = f"({literal(thinking.start)}? thought {literal(thinking.end)} [ \\t\\n]*)? "
        rules_extra = f"\nthought ::= {text_without(thinking.end)}"
    root = f"root ::= {think}{head}tool-call{repeat}{tail}"
    alternatives = " | ".join(f"( {call} )" for call in calls)
    gbnf = "\n".join((rules + rules_extra, f"tool-call ::= {alternatives}", root))
    if not lazy:
        return ToolGrammar(gbnf, ())
    trigger = regex_escape(syntax.trigger)
    if isinstance(syntax, JsonToolSyntax) and syntax.at_start:
        trigger = rf"^\s*({trigger})"
    if builtin and python_tag is not None:
        return ToolGrammar(gbnf, (trigger, regex_escape(python_tag.trigger)))
    return ToolGrammar(gbnf, (trigger,))
