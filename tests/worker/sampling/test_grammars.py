"""Which grammar a request asks for (worker.sampling.grammars.grammar_for), as GBNF text."""

from __future__ import annotations

from typing import Any

import pytest

from worker.sampling.grammars import GrammarError, grammar_for
from worker.sampling.schema_grammar import json_schema_to_grammar

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


@pytest.mark.parametrize(
    ("json_schema", "response_format"),
    [
        ({}, None),
        (None, {"type": "json_object"}),
        (None, {"type": "json_object", "schema": {}}),
        (None, {"type": "json_schema", "json_schema": {}}),
        (None, {"type": "json_schema", "json_schema": {"schema": {}}}),
    ],
)
def test_no_schema_or_an_empty_one_is_any_object_as_in_llama_server(
    json_schema: Any, response_format: dict[str, Any] | None
) -> None:
    any_object = json_schema_to_grammar({"type": "object"})
    assert grammar_for(None, json_schema, response_format) == any_object
    assert any_object.startswith("array ::= ")
    assert "root ::= object\n" in any_object


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
        (None, "not a schema", None, "Field 'json_schema'.*\n.*schema must be an object"),
        (None, None, {"type": "yaml"}, "response_format.type"),
        (
            None,
            None,
            {"type": "json_schema", "json_schema": {"schema": 3}},
            "response_format.json_schema",
        ),
        (None, {"type": "bogus"}, None, "Field 'json_schema': .*conversion failed:\n.*bogus"),
    ],
)
def test_conflicting_or_unusable_constraints_name_the_field(
    grammar: str | None, json_schema: Any, response_format: dict[str, Any] | None, message: str
) -> None:
    with pytest.raises(GrammarError, match=message):
        grammar_for(grammar, json_schema, response_format)
