"""Structured output: ``grammar``, ``json_schema`` and ``response_format`` become one GBNF grammar.

llama.cpp constrains sampling with GBNF; JSON Schemas are converted by a port of llama.cpp's
own converter (``schema_grammar``), and read as llama-server reads them: an empty schema, and
``json_object`` without one, mean any JSON object. So the same request means the same grammar
as in llama-server.
"""

from __future__ import annotations

from typing import Any

from worker.sampling.schema_grammar import SchemaError, json_schema_to_grammar

__all__ = ["GrammarError", "grammar_for"]

_ANY_OBJECT = {"type": "object"}


class GrammarError(ValueError):
    """The request's grammar or schema cannot be used; the message names the field."""


def _from_schema(schema: Any, field: str) -> str:
    try:  # what is not an object, the converter refuses in llama.cpp's words
        return json_schema_to_grammar(_ANY_OBJECT if schema == {} else schema)
    except SchemaError as exc:
        # llama-server's words: its field check names the field, then its converter's handler
        raise GrammarError(f"Field '{field}': \"{field}\": {exc}") from None


def grammar_for(
    grammar: str | None, json_schema: Any, response_format: dict[str, Any] | None
) -> str | None:
    """The one grammar a request asks for, or None; more than one is a client error."""
    wanted: list[tuple[str, str]] = []
    if grammar:
        wanted.append(("grammar", grammar))
    if json_schema is not None:
        wanted.append(("json_schema", _from_schema(json_schema, "json_schema")))
    if response_format is not None:
        kind = response_format.get("type")
        if kind == "json_object":
            schema = response_format.get("schema", _ANY_OBJECT)
            wanted.append(("response_format", _from_schema(schema, "response_format.schema")))
        elif kind == "json_schema":
            spec = response_format.get("json_schema") or {}
            schema = spec.get("schema", _ANY_OBJECT) if isinstance(spec, dict) else None
            wanted.append(("response_format", _from_schema(schema, "response_format.json_schema")))
        elif kind != "text":
            raise GrammarError("response_format.type must be one of text, json_object, json_schema")
    if len(wanted) > 1:
        raise GrammarError(
            f"give only one of grammar, json_schema, response_format (got {len(wanted)})"
        )
    return wanted[0][1] if wanted else None
