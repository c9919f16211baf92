"""Record llama.cpp's own GBNF for a broad set of JSON Schemas (docs/api.md, Sampling).

Compiles ``scripts/schema_to_grammar.cpp`` (a few lines around llama.cpp's
``json_schema_to_grammar``) against the ``libllama-common.so`` of a llama.cpp build from the
same sdist, feeds it every schema below and writes each schema with its grammar, or llama.cpp's
error, to ``tests/worker/sampling_goldens/schema_grammars.json``;
tests/worker/sampling/test_schema_grammar.py checks Corral's converter against them.

    .venv/bin/python scripts/record_schema_grammar_goldens.py --llama-build /work/llama-build \
        --llama-src /tmp/sdist/llama_cpp_python-0.3.36/vendor/llama.cpp
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import tempfile
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
GOLDENS = ROOT / "tests" / "worker" / "sampling_goldens" / "schema_grammars.json"

_OBJ: dict[str, Any] = {"type": "object"}
SCHEMAS: list[Any] = [
    # primitives and the server's "any object" ({} and json_object become {"type": "object"})
    _OBJ,
    {},
    {"type": "string"},
    {"type": "number"},
    {"type": "integer"},
    {"type": "boolean"},
    {"type": "null"},
    {"type": "array"},
    {"type": ["string", "null"]},
    {"type": ["integer", "number"]},
    # objects: required, optional, additional properties, names needing escapes
    {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
    },
    {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "number"}, "c": {"type": "boolean"}},
        "required": ["b"],
    },
    {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
    {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True},
    {
        "type": "object",
        "properties": {"and": {}, "also": {}},
        "additionalProperties": {"type": "integer"},
        "required": ["and"],
    },
    {"type": "object", "additionalProperties": {"type": "number"}},
    {"type": "object", "additionalProperties": False},
    {"type": "object", "properties": {}},
    {"properties": {"x": {"type": "integer"}}},
    {
        "type": "object",
        "properties": {
            "a b/c": {"type": "string"},
            "number": {"type": "number"},
            "root": {"type": "null"},
            "é字": {"const": "ü"},
            'q"uote\\': {"type": "boolean"},
        },
    },
    {
        "type": "object",
        "properties": {
            "outer": {
                "type": "object",
                "properties": {"inner": {"type": "array", "items": {"type": "string"}}},
                "required": ["inner"],
            }
        },
        "required": ["outer"],
    },
    # arrays and tuples
    {"type": "array", "items": {"type": "integer"}},
    {"type": "array", "items": {"type": "string"}, "minItems": 1},
    {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 5},
    {"type": "array", "items": {"type": "number"}, "maxItems": 1},
    {"type": "array", "items": {"type": "number"}, "maxItems": 0},
    {"type": "array", "items": {"type": "boolean"}, "minItems": 3, "maxItems": 3},
    {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
    {"type": "array", "items": [{"type": "null"}]},
    {"items": {"type": "string"}},
    # strings
    {"type": "string", "minLength": 1},
    {"type": "string", "maxLength": 8},
    {"type": "string", "minLength": 2, "maxLength": 4},
    {"type": "string", "minLength": 0, "maxLength": 1},
    {"type": "string", "format": "date"},
    {"type": "string", "format": "time"},
    {"type": "string", "format": "date-time"},
    {"type": "string", "format": "uuid"},
    {"type": "string", "format": "uuid4"},
    {"type": "string", "format": "email"},
    {"format": "date"},
    {"type": "string", "pattern": "^[a-z]+$"},
    {"type": "string", "pattern": "^\\d{3}-\\d{4}$"},
    {"type": "string", "pattern": "^(abc|de)+x?$"},
    {"type": "string", "pattern": "^[A-Z]{2,}[0-9]{1,3}(?:-[a-z]{0,2})?$"},
    {"type": "string", "pattern": '^a.b\\.c"d$'},
    {"type": "string", "pattern": "^ab{3}(cd){2,4}e{,2}$"},
    {"type": "string", "pattern": "^[\\x41-\\x5A\\-]+\\u00e9$"},
    {"type": "string", "pattern": "^(?=a)b$"},
    {"type": "string", "pattern": "abc"},
    {"type": "string", "pattern": "^(ab$"},
    {"type": "string", "pattern": "^*a$"},
    {"pattern": "^x+$"},
    # integers: bounds of every shape
    {"type": "integer", "minimum": 0},
    {"type": "integer", "minimum": 1},
    {"type": "integer", "minimum": 3},
    {"type": "integer", "minimum": 10},
    {"type": "integer", "minimum": 275},
    {"type": "integer", "minimum": -5},
    {"type": "integer", "minimum": -123},
    {"type": "integer", "maximum": 0},
    {"type": "integer", "maximum": 9},
    {"type": "integer", "maximum": 42},
    {"type": "integer", "maximum": -7},
    {"type": "integer", "maximum": -300},
    {"type": "integer", "minimum": 0, "maximum": 9},
    {"type": "integer", "minimum": 1, "maximum": 100},
    {"type": "integer", "minimum": 5, "maximum": 30},
    {"type": "integer", "minimum": 12, "maximum": 987},
    {"type": "integer", "minimum": -10, "maximum": 10},
    {"type": "integer", "minimum": -30, "maximum": -5},
    {"type": "integer", "minimum": 1900, "maximum": 2100},
    {"type": "integer", "minimum": 100, "maximum": 199},
    {"type": "integer", "exclusiveMinimum": 0},
    {"type": "integer", "exclusiveMaximum": 10},
    {"type": "integer", "minimum": 1.5, "maximum": 7.9},
    {"type": "integer", "minimum": 2, "maximum": 2},
    # const, enum, combinators
    {"const": "fixed"},
    {"const": 42},
    {"const": 1.5},
    {"const": {"a": [1, True, None]}},
    {"const": 1e20},
    {"const": 0.0001},
    {"const": 12345678901234567.0},
    {"const": 1000000000000000.0},
    {"enum": ["red", "green", "blue"]},
    {"enum": [1, "two", None, 3.25, False]},
    {"type": "string", "enum": ["a\nb", 'c"d']},
    {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    {"oneOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"type": "null"}]},
    {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"type": "object", "properties": {"b": {"type": "integer"}}},
        ]
    },
    {"allOf": [{"enum": ["x", "y", "z"]}, {"enum": ["y", "z", "w"]}]},
    {
        "allOf": [{"$ref": "#/$defs/base"}, {"anyOf": [{"properties": {"c": {"type": "null"}}}]}],
        "$defs": {"base": {"type": "object", "properties": {"b": {"type": "boolean"}}}},
    },
    {"type": "object", "allOf": [{"properties": {"p": {"type": "number"}}}]},
    # references, recursion
    {
        "$ref": "#/definitions/item",
        "definitions": {
            "item": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/definitions/item"}},
                },
            }
        },
    },
    {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/pos"}, "b": {"$ref": "#/$defs/pos"}},
        "$defs": {"pos": {"type": "integer", "minimum": 1}},
    },
    {"type": "array", "items": {"$ref": "#/prefixItems/0"}, "prefixItems": [{"type": "string"}]},
    # names that clash: built-in rule names, one name for two different rules, non-ASCII text
    {
        "type": "object",
        "properties": {
            "string": {"type": "integer"},
            "char": {"type": "string", "maxLength": 2},
            "value": {},
            "integer": {"type": "integer", "minimum": 2},
        },
    },
    {
        "type": "object",
        "properties": {
            "x": {"type": "object", "properties": {"a": {"type": "string"}}},
            "y": {"type": "object", "properties": {"a": {"type": "number"}}},
            "x-a": {"type": "boolean"},
        },
    },
    {
        "type": "object",
        "properties": {"über": {}, "ünd": {}, "u": {}},
        "additionalProperties": True,
    },
    {
        "type": "object",
        "properties": {"": {"type": "null"}},
        "additionalProperties": {"type": "string"},
    },
    {"type": "string", "pattern": "^(é|ü)+ñ{2}[à-ÿ]$"},
    {"type": "string", "pattern": "^aé+$"},
    {"type": "string", "pattern": "^[\\d]$"},
    {"type": "string", "pattern": "^\\$"},
    {"type": "string", "pattern": "^a{ 2 , 3 }$"},
    {"type": "string", "pattern": "^a{x}$"},
    {"type": "string", "pattern": "^a{}$"},
    {"type": "string", "pattern": "^(a(b)c){2}(a(b)c){3}$"},
    {"const": "tab\tnew\nctl\u0001del\u007f"},
    {"enum": [1e-05, -0.0, 5e-324, 1.7976931348623157e308, 123456789012345678901234567890, -3]},
    {"const": 0.1},
    {"const": 100.0},
    {"const": 1234567.125},
    {"const": -2.5e-7},
    {"type": "integer", "minimum": 12345678901234567},
    {"type": "integer", "maximum": 12345678901234567},
    {"type": "integer", "exclusiveMinimum": 2.5, "exclusiveMaximum": 9.5},
    {"type": "integer", "minimum": -9, "maximum": 1000000},
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "zzz", 3]},
    {
        "allOf": [
            {"properties": {"a": {"type": "string"}}},
            {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
        ]
    },
    {
        "type": ["object", "array"],
        "properties": {"k": {"type": "string"}},
        "items": {"type": "integer"},
    },
    {
        "type": "object",
        "properties": {"n": {"type": "string"}},
        "additionalProperties": True,
        "required": ["n"],
    },
    {
        "anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}],
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"type": "string"}},
    },
    # errors llama.cpp reports
    {"type": "bogus"},
    {"type": []},
    {"$ref": "https://example.com/schema"},
    {"$ref": "#/missing"},
    {"type": "array", "minItems": -1},
    {"type": "string", "maxLength": "3"},
    {"enum": []},
    {"anyOf": []},
    {"type": "integer", "minimum": "1"},
    {"type": "object", "properties": []},
    {"type": "object", "additionalProperties": 3},
    {"type": 5},
    {"format": 3},
    # a typical structured-output schema (OpenAI response_format)
    {
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 40},
            "rating": {"type": "integer", "minimum": 1, "maximum": 5},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
            "status": {"enum": ["draft", "final"]},
            "published": {"type": "string", "format": "date"},
            "score": {"type": ["number", "null"]},
        },
        "required": ["title", "rating", "tags"],
        "additionalProperties": False,
    },
]


def _compile(build: pathlib.Path, src: pathlib.Path, out: pathlib.Path) -> None:
    includes = [f"-I{src / d}" for d in ("common", "include", "ggml/include", "vendor")]
    lib = build / "bin"
    subprocess.run(
        [
            "g++",
            "-std=c++17",
            *includes,
            str(ROOT / "scripts" / "schema_to_grammar.cpp"),
            f"-L{lib}",
            "-lllama-common",
            f"-Wl,-rpath,{lib}",
            "-o",
            str(out),
        ],
        check=True,
    )


def record(tool: pathlib.Path) -> list[dict[str, Any]]:
    lines = "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in SCHEMAS).encode()
    answer = subprocess.run([str(tool)], input=lines, capture_output=True, check=True)
    # a quantifier after a non-ASCII pattern character splits its bytes: not UTF-8, as in Corral
    answers = answer.stdout.decode("utf-8", "replace").split("\x1e\n")[:-1]
    assert len(answers) == len(SCHEMAS), (len(answers), len(SCHEMAS))
    goldens = []
    for schema, text in zip(SCHEMAS, answers, strict=True):
        status, _, body = text.partition("\n")
        key = "grammar" if status == "OK" else "error"
        goldens.append({"schema": schema, key: body if key == "grammar" else body.rstrip("\n")})
    return goldens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-build", type=pathlib.Path, required=True)
    parser.add_argument("--llama-src", type=pathlib.Path, required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tool = pathlib.Path(tmp) / "schema_to_grammar"
        _compile(args.llama_build, args.llama_src, tool)
        goldens = record(tool)
    GOLDENS.write_text(json.dumps(goldens, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(goldens)} schemas to {GOLDENS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
