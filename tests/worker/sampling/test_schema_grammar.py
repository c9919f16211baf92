"""Corral's JSON Schema to GBNF (worker.sampling.schema_grammar) against llama.cpp's own.

tests/worker/sampling_goldens/schema_grammars.json holds, for each of a broad set of schemas,
the grammar (or error) of llama.cpp's ``json_schema_to_grammar`` from the llama-cpp-python
sdist Corral is built on (scripts/record_schema_grammar_goldens.py): every one must match byte
for byte, so a schema constrains sampling exactly as in llama-server.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from worker.sampling.schema_grammar import SchemaError, json_schema_to_grammar

GOLDENS = pathlib.Path(__file__).parent.parent / "sampling_goldens" / "schema_grammars.json"
CASES: list[dict[str, Any]] = json.loads(GOLDENS.read_text())


@pytest.mark.parametrize(
    "case", CASES, ids=[json.dumps(c["schema"], ensure_ascii=False)[:60] for c in CASES]
)
def test_the_grammar_is_llama_cpps(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(SchemaError) as caught:
            json_schema_to_grammar(case["schema"])
        assert str(caught.value) == case["error"]
    else:
        assert json_schema_to_grammar(case["schema"]) == case["grammar"]


def test_the_goldens_cover_every_kind_of_rule() -> None:
    """A guard on the golden file: it must keep exercising the converter's branches."""
    grammars = "".join(c.get("grammar", "") for c in CASES)
    for piece in (
        "-rest ::=",
        "additional-k ::=",
        "ref-",
        "[0-9]{",
        "date-time",
        "[0-9a-fA-F]{12}",
        "dot ::=",
    ):
        assert piece in grammars, piece
    assert sum("error" in c for c in CASES) >= 10
