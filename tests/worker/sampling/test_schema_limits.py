"""JSON Schemas past the size caps (worker.sampling.schema_limits) are a 400 that names the
limit, whichever field carries them, from a real worker over HTTP; and the worker answers the
next request. Within the caps, schemas convert as before (test_schema_grammar's goldens)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.worker_process import WorkerProcess, worker
from worker.sampling.json_schema import SchemaError
from worker.sampling.schema_grammar import json_schema_to_grammar
from worker.sampling.schema_limits import (
    MAX_SCHEMA_DEPTH,
    MAX_SCHEMA_NODES,
    check_schema_size,
)

WEIGHT = "its objects' optional properties, each object's count squared, add up to more than 65536"


def optional_properties(count: int, prefix: str = "p") -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {f"{prefix}{i}": {"type": "string"} for i in range(count)},
    }


def nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "array", "items": schema}
    return schema


def test_an_object_of_256_optional_properties_converts() -> None:
    assert "root ::=" in json_schema_to_grammar(optional_properties(256))


@pytest.mark.parametrize(
    ("schema", "wanted"),
    [
        (optional_properties(257), f"{WEIGHT} (an object of 257)"),
        # Many objects, each under 256, weigh together.
        ({"anyOf": [optional_properties(200, f"o{n}_") for n in range(2)]}, WEIGHT),
        (nested(MAX_SCHEMA_DEPTH), f"nested more than {MAX_SCHEMA_DEPTH} levels"),
        ({"enum": list(range(MAX_SCHEMA_NODES))}, f"more than {MAX_SCHEMA_NODES} values"),
    ],
)
def test_a_schema_past_a_cap_is_refused_naming_it(schema: Any, wanted: str) -> None:
    with pytest.raises(SchemaError, match="JSON schema too") as caught:
        check_schema_size(schema)
    assert wanted in str(caught.value)


def test_objects_merged_by_all_of_count_as_one() -> None:
    # Three alternatives of 100 each weigh 30,000 apart; allOf makes them one object of 300.
    parts = [optional_properties(100, f"o{n}_") for n in range(3)]
    schema = {"allOf": [{"anyOf": parts}]}
    check_schema_size(schema)
    with pytest.raises(SchemaError, match=r"\(an object of 300\)"):
        json_schema_to_grammar(schema)


@pytest.fixture(scope="module")
def alpha(models_dir: Path) -> Iterator[WorkerProcess]:
    with worker(models_dir / "alpha.gguf") as child:
        yield child


LARGE = optional_properties(1600)
ASK = [{"role": "user", "content": "Hi"}]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/chat/completions", {"messages": ASK, "json_schema": LARGE}),
        (
            "/v1/chat/completions",
            {
                "messages": ASK,
                "response_format": {"type": "json_schema", "json_schema": {"schema": LARGE}},
            },
        ),
        (
            "/v1/chat/completions",
            {
                "messages": ASK,
                "tools": [{"type": "function", "function": {"name": "f", "parameters": LARGE}}],
            },
        ),
        ("/completion", {"prompt": "Hi", "json_schema": LARGE}),
    ],
)
def test_1600_optional_properties_are_a_400_and_the_worker_answers_on(
    alpha: WorkerProcess, path: str, body: dict[str, Any]
) -> None:
    refused = httpx.post(f"{alpha.url}{path}", json={**body, "max_tokens": 2}, timeout=60)
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error["code"] == 400
    assert f"JSON schema too large: {WEIGHT} (an object of 1600)" in error["message"]
    answered = httpx.post(
        f"{alpha.url}/v1/chat/completions", json={"messages": ASK, "max_tokens": 2}, timeout=60
    )
    assert answered.status_code == 200, answered.text
