"""How large a JSON Schema a request may have turned into a grammar (docs/security.md, "Media and
JSON schemas in workers").

llama.cpp's converter, and Corral's port of it (``schema_grammar``, for the tools' grammars
too), recurse once per level of a schema and, for an object's optional properties, once per
property, writing the alternatives for every suffix of them: an object of n optional
properties costs n² to n³. Unbounded, one request of 1,600 optional properties took
seconds and then failed with a RecursionError. These caps keep every schema a client sends
(``json_schema``, ``response_format``, the tools' ``parameters`` together) within a fraction of
a second of conversion, and one past them is a 400 that names the limit before any conversion
starts. The walk below does not recurse, so a deep schema cannot crash the check itself.
"""

from __future__ import annotations

from typing import Any

from worker.sampling.json_schema import SchemaError

__all__ = [
    "MAX_OPTIONAL_WEIGHT",
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_NODES",
    "OptionalWeight",
    "check_schema_size",
]

# JSON values in one schema (objects, arrays, strings, numbers…): a hundred tools of fifty each
# fit twice over.
MAX_SCHEMA_NODES = 20_000
# Levels of JSON nesting (a property's schema is two levels below its object).
MAX_SCHEMA_DEPTH = 64
# Each object's optional properties, squared, summed over the schema: one object of 256, four
# of 128, a hundred tools of 25 each.
MAX_OPTIONAL_WEIGHT = 256 * 256


class OptionalWeight:
    """The running sum of objects' optional properties squared, against its cap."""

    def __init__(self) -> None:
        self.total = 0

    def add(self, count: int) -> None:
        """Count an object's ``count`` optional properties; SchemaError past the cap."""
        self.total += count * count
        if self.total > MAX_OPTIONAL_WEIGHT:
            raise SchemaError(
                f"JSON schema too large: its objects' optional properties, each object's count "
                f"squared, add up to more than {MAX_OPTIONAL_WEIGHT} (an object of {count})"
            )


def _optional_count(node: dict[str, Any]) -> int:
    properties = node.get("properties")
    if not isinstance(properties, dict):
        return 0
    required = node.get("required")
    named = (
        {name for name in required if isinstance(name, str)}
        if isinstance(required, list)
        else set()
    )
    return len(properties.keys() - named)


def check_schema_size(schema: Any) -> None:
    """SchemaError naming the limit when ``schema`` (decoded JSON) is past any cap above."""
    nodes, weight = 0, OptionalWeight()
    stack: list[tuple[Any, int]] = [(schema, 1)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > MAX_SCHEMA_NODES:
            raise SchemaError(f"JSON schema too large: more than {MAX_SCHEMA_NODES} values")
        if depth > MAX_SCHEMA_DEPTH:
            raise SchemaError(f"JSON schema too deep: nested more than {MAX_SCHEMA_DEPTH} levels")
        if isinstance(node, dict):
            weight.add(_optional_count(node))
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            stack.extend((child, depth + 1) for child in node)
