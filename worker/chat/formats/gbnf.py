"""GBNF and trigger building blocks shared by the tool grammars (docs/tool-calls.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from worker.sampling.schema_grammar import SchemaRules
from worker.sampling.schema_rules import SPACE_RULE

__all__ = [
    "GAP_RULE",
    "ToolGrammar",
    "argument_rules",
    "choice",
    "functions",
    "literal",
    "parameters",
    "regex_escape",
    "text_without",
]

# llama.cpp's "space" (json-schema-to-grammar.cpp's SPACE_RULE): a bounded run, so a model
# cannot pad a call forever; for the syntaxes that are not JSON, whose grammars may have no
# schema's rules (and so no "space").
GAP_RULE = f"gap ::= {SPACE_RULE}"
# Characters a trigger must escape in llama.cpp's (ECMAScript) regular expressions.
_REGEX_SPECIAL = re.compile(r"([\\^$.|?*+()\[\]{}])")


@dataclass(frozen=True, slots=True)
class ToolGrammar:
    gbnf: str
    triggers: tuple[str, ...]  # regular expressions; empty: the grammar holds from the start


def literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") + '"'


def choice(calls: list[str]) -> str:
    """One of ``calls``, each a GBNF sequence."""
    return " | ".join(f"( {call} )" for call in calls)


def _class(char: str) -> str:
    """``char`` inside a GBNF character class."""
    return "\\" + char if char in "]\\^-" else char


def text_without(stop: str) -> str:
    """Any text that does not contain ``stop``'s first two characters (``stop`` has two or
    more): a grammar cannot say "anything but this string" more exactly without many rules."""
    first, second = stop[0], stop[1]
    return f"([^{_class(first)}] | {literal(first)} [^{_class(second)}])*"


def regex_escape(text: str) -> str:
    """``text`` as a trigger pattern that matches it literally."""
    return _REGEX_SPECIAL.sub(r"\\\1", text)


def parameters(function: dict[str, Any]) -> dict[str, Any]:
    """A function's parameter schema. OpenAI reads a function without ``parameters`` as one
    that takes none, so its arguments must be ``{}`` (not any object, which let the model
    invent some); an empty schema stays "any object", as before."""
    schema = function.get("parameters")
    if schema is None:
        return {"type": "object", "properties": {}}
    return schema or {"type": "object"}


def functions(tools: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Each tool's name and parameter schema."""
    return [(t["function"]["name"], parameters(t["function"])) for t in tools]


def argument_rules(rules: SchemaRules, tools: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Each tool's name and the rule of its parameters' schema, added to ``rules``."""
    return [
        (name, rules.add(parameters, f"tool-{index}-args"))
        for index, (name, parameters) in enumerate(functions(tools))
    ]
