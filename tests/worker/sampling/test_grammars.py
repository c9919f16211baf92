"""Which grammar a request asks for (worker.sampling.grammars.grammar_for), as GBNF text."""

from __future__ import annotations

from typing import Any

import pytest
from llama_cpp.llama_grammar import JSON_GBNF

from worker.sampling.grammars import GrammarError, grammar_for

OBJECT_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def test_no_constraint_is_no_grammar() -> None:
    assert grammar_for(None, None, None) is None
    assert grammar_for("", None, {"type": "text"}) is None


def test_a_grammar_is_passed_through_as_written() -> None:
    assert grammar_for('root ::= "a"', None, None) == 'root ::= "a"'


def test_a_json_schema_becomes_a_grammar_for_its_fields() -> None:
    gbnf = grammar_for(None, OBJECT_SCHEMA, None)
    assert gbnf is not None
    assert "root ::=" in gbnf
    assert '\\"n\\"' in gbnf


def test_json_object_without_a_schema_is_any_json() -> None:
    assert grammar_for(None, None, {"type": "json_object"}) == JSON_GBNF


@pytest.mark.parametrize(
    "response_format",
    [
        {"type": "json_object", "schema": OBJECT_SCHEMA},
        {"type": "json_schema", "json_schema": {"schema": OBJECT_SCHEMA}},
    ],
)
def test_response_format_with_a_schema_means_the_same_as_json_schema(
    response_format: dict[str, Any],
) -> None:
    assert grammar_for(None, None, response_format) == grammar_for(None, OBJECT_SCHEMA, None)


@pytest.mark.parametrize(
    ("grammar", "json_schema", "response_format", "message"),
    [
        ('root ::= "a"', OBJECT_SCHEMA, None, "only one"),
        (None, OBJECT_SCHEMA, {"type": "json_object"}, "only one"),
        (None, "not a schema", None, "json_schema must be a JSON Schema object"),
        (None, None, {"type": "yaml"}, "response_format.type"),
        (None, None, {"type": "json_schema", "json_schema": {}}, "response_format.json_schema"),
    ],
)
def test_conflicting_or_unusable_constraints_name_the_field(
    grammar: str | None, json_schema: Any, response_format: dict[str, Any] | None, message: str
) -> None:
    with pytest.raises(GrammarError, match=message):
        grammar_for(grammar, json_schema, response_format)
