"""A JSON Schema read into the few node kinds llama.cpp's grammar converter knows.

A line-by-line port of llama.cpp's ``common/json-schema.cpp`` (``common_chat_schema_from_json``):
which keyword wins, which schemas are errors and their messages are llama.cpp's, so that
``schema_grammar`` makes llama-server's grammar of every schema. Strings here are already in
the byte view ``schema_grammar`` works in (see there).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "AllOf",
    "AnyOf",
    "AnyValue",
    "ArrayOf",
    "Const",
    "Enum",
    "Integer",
    "ObjectOf",
    "Primitive",
    "Ref",
    "Schema",
    "SchemaError",
    "StringOf",
    "Tuple",
    "read_schema",
    "stoi",
]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
_UUID_FORMAT = re.compile(r"uuid[1-5]?")
_LEADING_INT = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")


class SchemaError(ValueError):
    """The schema cannot be read; the message is llama.cpp's."""


@dataclass(slots=True)
class AnyValue:
    """Any JSON value."""


@dataclass(slots=True)
class Primitive:
    kind: str  # "null", "boolean" or "number": nothing more to say about them


@dataclass(slots=True)
class Ref:
    ref: str
    target: Schema | None = None  # set once the whole schema is read: a cycle needs it late
    # Starts its rule's name: documents read into one grammar (tools') each name theirs apart.
    scope: str = ""


@dataclass(slots=True)
class AnyOf:
    children: list[Schema]


@dataclass(slots=True)
class AllOf:
    children: list[Schema]


@dataclass(slots=True)
class Const:
    value: Any


@dataclass(slots=True)
class Enum:
    values: list[Any]


@dataclass(slots=True)
class Integer:
    minimum: int = INT64_MIN  # INT64_MIN: unbounded
    maximum: int = INT64_MAX  # INT64_MAX: unbounded


@dataclass(slots=True)
class StringOf:
    pattern: str = ""
    format: str = ""  # "", "uuid", "date", "time" or "date-time"
    min_length: int = 0
    max_length: int = -1  # -1: unbounded


@dataclass(slots=True)
class ArrayOf:
    items: Schema
    min_items: int = 0
    max_items: int = -1  # -1: unbounded


@dataclass(slots=True)
class Tuple:
    items: list[Schema]


@dataclass(slots=True)
class ObjectOf:
    properties: list[tuple[str, Schema, bool]] = field(
        default_factory=list
    )  # name, schema, required
    additional: Schema | None = None  # None: no other keys allowed


Schema = (
    AnyValue
    | Primitive
    | Ref
    | AnyOf
    | AllOf
    | Const
    | Enum
    | Integer
    | StringOf
    | ArrayOf
    | Tuple
    | ObjectOf
)


def is_integer(value: Any) -> bool:
    """nlohmann's is_number_integer: a JSON integer (Python's bools are ints, JSON's are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _wrap(value: int, bits: int) -> int:
    """``value`` cast to a signed C integer of ``bits`` bits, as nlohmann's get<int> does."""
    half = 1 << (bits - 1)
    return (value + half) % (1 << bits) - half


def stoi(text: str, bits: int = 32) -> int:
    """C++'s std::stoi: leading blanks, a sign and digits, the rest ignored; ValueError where it
    throws (no digits, or out of range)."""
    match = _LEADING_INT.match(text)
    if match is None:
        raise ValueError(text)
    value = int(match.group(1))
    if _wrap(value, bits) != value:
        raise ValueError(text)
    return value


def _fail(path: str, message: str) -> SchemaError:
    return SchemaError(f"JSON schema error at {path}: {message}")


def _count(schema: dict[str, Any], key: str, path: str, default: int) -> int:
    if key not in schema:
        return default
    value = schema[key]
    if not is_integer(value) or _wrap(value, 32) < 0:
        raise _fail(path, f"{key} must be a non-negative integer")
    return _wrap(value, 32)


def _bound(schema: dict[str, Any], key: str, path: str, round_up: bool) -> int:
    """A fractional bound rounds inwards, towards the integers it still admits."""
    value = schema[key]
    if is_integer(value):
        return _wrap(value, 64)
    if not isinstance(value, float):
        raise _fail(path, f"{key} must be a number")
    rounded = math.ceil(value) if round_up else math.floor(value)
    # a double past int64's range converts to INT64_MIN on the x86 builds llama-server ships
    return rounded if INT64_MIN <= rounded <= INT64_MAX else INT64_MIN


def _format(schema: dict[str, Any], path: str) -> str:
    if "format" not in schema:
        return ""
    value = schema["format"]
    if not isinstance(value, str):
        raise _fail(path, "format must be a string")
    if value in ("date", "time", "date-time"):
        return value
    return "uuid" if _UUID_FORMAT.fullmatch(value) else ""


class _Reader:
    def __init__(self, root: Any, scope: str) -> None:
        self._root = root
        self._scope = scope
        self._refs: dict[str, Schema | None] = {}
        self._pending: list[Ref] = []

    def read(self, schema: Any) -> Schema:
        node = self._node(schema, "#")
        for ref in self._pending:
            ref.target = self._refs[ref.ref]
        return node

    def _resolve(self, ref: str, path: str) -> Any:
        target = self._root
        for sel in ref[1:].split("/")[1:]:
            if isinstance(target, dict) and sel in target:
                target = target[sel]
            elif isinstance(target, list):
                try:
                    index = stoi(sel, 64)
                except ValueError:
                    index = len(target)
                if not 0 <= index < len(target):
                    raise _fail(path, f"cannot resolve $ref {ref}, {sel} is out of range")
                target = target[index]
            else:
                raise _fail(path, f"cannot resolve $ref {ref}, {sel} not found")
        return target

    def _ref(self, value: Any, path: str) -> Schema:
        if not isinstance(value, str):
            raise _fail(path, "$ref must be a string")
        if not value.startswith("#/"):
            raise _fail(
                path,
                f"unsupported $ref {value}, only references into the same document are supported",
            )
        if value not in self._refs:
            self._refs[value] = None  # reserved first, so that a cycle back here stops
            self._refs[value] = self._node(self._resolve(value, path), value)
        node = Ref(value, scope=self._scope)
        self._pending.append(node)
        return node

    def _alternatives(self, alts: Any, path: str) -> list[Schema]:
        if not isinstance(alts, list):
            raise _fail(path, "must be an array of schemas")
        if not alts:
            raise _fail(path, "must not be empty")
        return [self._node(alt, f"{path}/{i}") for i, alt in enumerate(alts)]

    def _object(self, schema: dict[str, Any], path: str) -> Schema:
        node = ObjectOf()
        wanted = schema.get("required")
        required = {n for n in wanted if isinstance(n, str)} if isinstance(wanted, list) else set()
        if "properties" in schema:
            properties = schema["properties"]
            if not isinstance(properties, dict):
                raise _fail(path, "properties must be an object")
            for name, prop in properties.items():
                prop_node = self._node(prop, f"{path}/properties/{name}")
                node.properties.append((name, prop_node, name in required))
        if "additionalProperties" in schema:
            additional = schema["additionalProperties"]
            if isinstance(additional, bool):
                node.additional = AnyValue() if additional else None
            elif isinstance(additional, dict):
                node.additional = self._node(additional, f"{path}/additionalProperties")
            else:
                raise _fail(path, "additionalProperties must be a boolean or a schema")
        elif "properties" not in schema:
            node.additional = AnyValue()  # {"type": "object"} on its own accepts any object
        return node

    def _array(self, schema: dict[str, Any], path: str) -> Schema:
        items: Schema = AnyValue()
        if "items" in schema or "prefixItems" in schema:
            key = "items" if "items" in schema else "prefixItems"
            given = schema[key]
            if isinstance(given, list):
                return Tuple(
                    [self._node(item, f"{path}/{key}/{i}") for i, item in enumerate(given)]
                )
            items = self._node(given, f"{path}/{key}")
        return ArrayOf(
            items, _count(schema, "minItems", path, 0), _count(schema, "maxItems", path, -1)
        )

    def _string(self, schema: dict[str, Any], path: str) -> Schema:
        pattern = schema.get("pattern", "")
        if not isinstance(pattern, str):
            raise _fail(path, "pattern must be a string")
        return StringOf(
            pattern,
            _format(schema, path),
            _count(schema, "minLength", path, 0),
            _count(schema, "maxLength", path, -1),
        )

    def _integer(self, schema: dict[str, Any], path: str) -> Schema:
        node = Integer()
        if "minimum" in schema:
            node.minimum = _bound(schema, "minimum", path, round_up=True)
        elif "exclusiveMinimum" in schema:
            node.minimum = _wrap(_bound(schema, "exclusiveMinimum", path, round_up=False) + 1, 64)
        if "maximum" in schema:
            node.maximum = _bound(schema, "maximum", path, round_up=False)
        elif "exclusiveMaximum" in schema:
            node.maximum = _wrap(_bound(schema, "exclusiveMaximum", path, round_up=True) - 1, 64)
        return node

    def _node(self, schema: Any, path: str) -> Schema:
        if isinstance(schema, Schema):  # a document read before, its references its own
            return schema
        if not isinstance(schema, dict):
            raise _fail(path, "schema must be an object")
        if "$ref" in schema:
            return self._ref(schema["$ref"], path)
        if "oneOf" in schema or "anyOf" in schema:
            key = "oneOf" if "oneOf" in schema else "anyOf"
            return AnyOf(self._alternatives(schema[key], f"{path}/{key}"))
        kind = schema.get("type")
        if isinstance(kind, list):
            # {"type": ["a", "b"], ...} is {"anyOf": [{"type": "a", ...}, {"type": "b", ...}]}
            if not kind:
                raise _fail(path, "type must not be empty")
            return AnyOf(
                [self._node({**schema, "type": t}, f"{path}/type/{i}") for i, t in enumerate(kind)]
            )
        if "const" in schema:
            return Const(schema["const"])
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list) or not values:
                raise _fail(path, "enum must be a non-empty array")
            return Enum(list(values))
        if kind is not None and not isinstance(kind, str):
            raise _fail(path, "type must be a string or an array of strings")
        has_properties = "properties" in schema or (
            "additionalProperties" in schema and schema["additionalProperties"] is not True
        )
        if not kind:
            # without a type the structural keywords decide, in the converter's order
            if has_properties:
                return self._object(schema, path)
            if "allOf" in schema:
                return AllOf(self._alternatives(schema["allOf"], f"{path}/allOf"))
            if "items" in schema or "prefixItems" in schema:
                return self._array(schema, path)
            if any(k in schema for k in ("pattern", "minLength", "maxLength")) or _format(
                schema, path
            ):
                return self._string(schema, path)
            return AnyValue()
        if "allOf" in schema and (kind == "string" or (kind == "object" and not has_properties)):
            return AllOf(self._alternatives(schema["allOf"], f"{path}/allOf"))
        if kind == "object":
            return self._object(schema, path)
        if kind == "string":
            return self._string(schema, path)
        if kind == "array":
            return self._array(schema, path)
        if kind == "integer":
            return self._integer(schema, path)
        if kind in ("number", "boolean", "null"):
            return Primitive(kind)
        raise _fail(path, f"unrecognized type {kind}")


def read_schema(schema: Any, root: Any = None, scope: str = "") -> Schema:
    """``schema`` (decoded JSON) as nodes; SchemaError where llama.cpp rejects it.

    Its ``#/`` references point into ``root`` (by default ``schema`` itself: a part of a
    document read alone keeps its references), and ``scope`` starts their rules' names. Nodes
    already read may stand in it for schemas: a tool's parameters inside the object of its call.
    """
    return _Reader(schema if root is None else root, scope).read(schema)
